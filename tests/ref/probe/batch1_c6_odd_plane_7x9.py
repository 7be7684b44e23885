"""Batch 1, 6 channels in 3 groups (not a multiple of 4), a 7x9 plane: GroupNorm -> sigmoid -> sum over dims (1, 2, 3)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.gn = nn.GroupNorm(3, 6)

    def forward(self, x):
        return torch.sigmoid(self.gn(self.conv(x))).sum(dim=(1, 2, 3))


def get_inputs():
    return [torch.randn(1, 3, 7, 9)]


def get_init_inputs():
    return []
