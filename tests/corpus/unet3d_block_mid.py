"""A 3-D segmentation UNet's double conv: Conv3d, GroupNorm, ReLU, twice."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, channels, groups):
        super().__init__()
        self.conv1 = nn.Conv3d(in_channels, channels, 3, padding=1)
        self.norm1 = nn.GroupNorm(groups, channels)
        self.conv2 = nn.Conv3d(channels, channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, channels)

    def forward(self, x):
        h = F.relu(self.norm1(self.conv1(x)))
        return F.relu(self.norm2(self.conv2(h)))


batch = 2
in_channels = 16
channels = 32
groups = 8
size = 32


def get_inputs():
    return [torch.randn(batch, in_channels, size, size, size)]


def get_init_inputs():
    return [in_channels, channels, groups]
