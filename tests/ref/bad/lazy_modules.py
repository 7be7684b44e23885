"""A LazyConv2d (in_channels inferred at the first call) and a LazyBatchNorm2d before a GroupNorm: no parameters to
give ModelNew until the first call."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.LazyConv2d(16, 3, padding=1)
        self.bn = nn.LazyBatchNorm2d()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        return torch.relu(self.gn(self.bn(self.conv(x))))


def get_inputs():
    return [torch.randn(2, 3, 12, 12)]


def get_init_inputs():
    return []
