"""A ResNet bottleneck with GroupNorm (Wu and He): 1x1 conv, GroupNorm, ReLU, 3x3 conv, GroupNorm, ReLU, 1x1 conv, GroupNorm, the identity, ReLU: three norm blocks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, width, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 1, bias=False)
        self.gn1 = nn.GroupNorm(groups, width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.gn2 = nn.GroupNorm(groups, width)
        self.conv3 = nn.Conv2d(width, channels, 1, bias=False)
        self.gn3 = nn.GroupNorm(groups, channels)

    def forward(self, x):
        h = F.relu(self.gn1(self.conv1(x)))
        h = F.relu(self.gn2(self.conv2(h)))
        return F.relu(self.gn3(self.conv3(h)) + x)


batch = 32
channels = 1024
width = 256
groups = 32
size = 28


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, width, groups]
