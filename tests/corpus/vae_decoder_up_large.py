"""A VAE decoder stage: a residual block (GroupNorm, SiLU, 3x3 conv, twice) then a nearest 2x upsampling and a 3x3 conv."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, channels, eps=1e-6)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, channels, eps=1e-6)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.up_conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = x + self.conv2(F.silu(self.norm2(h)))
        return self.up_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))


batch = 2
channels = 512
groups = 32
size = 64


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, groups]
