"""A GAN generator's upsampling block: a 4x4 stride-2 ConvTranspose2d, GroupNorm, ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, channels, groups):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, channels, 4, stride=2, padding=1, bias=False)
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return F.relu(self.norm(self.up(x)))


batch = 4
in_channels = 64
channels = 32
groups = 8
size = 4


def get_inputs():
    return [torch.randn(batch, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, channels, groups]
