"""A forward that lays its activation out channels-last itself (x.to(memory_format=torch.channels_last)) before the
conv, GroupNorm and GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        x = x.to(memory_format=torch.channels_last)
        return F.gelu(self.gn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 8, 12, 12)]


def get_init_inputs():
    return []
