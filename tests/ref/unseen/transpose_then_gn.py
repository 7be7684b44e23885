"""Sequence features (N, L, C) moved to (N, C, L) for a GroupNorm, then back, then a Linear."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.gn = nn.GroupNorm(8, channels)
        self.proj = nn.Linear(channels, channels)

    def forward(self, x):
        y = self.gn(x.transpose(1, 2)).transpose(1, 2)
        return self.proj(torch.relu(y))


def get_inputs():
    return [torch.randn(4, 50, 64)]


def get_init_inputs():
    return [64]
