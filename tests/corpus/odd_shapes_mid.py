"""Odd shapes: a 5x5 conv to 96 channels in 3 groups, GroupNorm, Mish, a 3x3 max pool, on planes whose sides are primes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 5)
        self.norm = nn.GroupNorm(groups, channels)
        self.pool = nn.MaxPool2d(3)

    def forward(self, x):
        return self.pool(F.mish(self.norm(self.conv(x))))


batch = 7
in_channels = 5
channels = 96
groups = 3
height = 131
width = 67


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, channels, groups]
