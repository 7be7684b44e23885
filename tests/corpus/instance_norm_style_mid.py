"""A style-transfer block with instance normalisation written as GroupNorm with one channel per group: reflection padding, conv, GroupNorm(C, C), LeakyReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 3)
        self.norm = nn.GroupNorm(channels, channels)

    def forward(self, x):
        return F.leaky_relu(self.norm(self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect"))), 0.2)


batch = 8
in_channels = 64
channels = 128
size = 64


def get_inputs():
    return [torch.randn(batch, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, channels]
