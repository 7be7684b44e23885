"""A for loop over an nn.ModuleList of GroupNorms with 1, 2 and 8 groups, each followed by F.relu and + 0.5."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.norms = nn.ModuleList([nn.GroupNorm(g, 8) for g in (1, 2, 8)])

    def forward(self, x):
        x = self.conv(x)
        for gn in self.norms:
            x = F.relu(gn(x)) + 0.5
        return x


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
