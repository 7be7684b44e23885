"""Pre-norm residual: x + conv(mish(GroupNorm(x))) with a non-default eps."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels, eps=1e-6)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv(F.mish(self.norm(x)))


def get_inputs():
    return [torch.randn(3, 24, 17, 15)]


def get_init_inputs():
    return [24]
