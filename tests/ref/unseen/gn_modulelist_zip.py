"""Norms and convs in two nn.ModuleLists walked together with zip, a residual each step."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, c=32, depth=3):
        super().__init__()
        self.norms = nn.ModuleList([nn.GroupNorm(8, c) for _ in range(depth)])
        self.convs = nn.ModuleList([nn.Conv1d(c, c, 5, padding=2) for _ in range(depth)])

    def forward(self, x):
        for norm, conv in zip(self.norms, self.convs):
            x = x + conv(F.gelu(norm(x)))
        return x


def get_inputs():
    return [torch.randn(4, 32, 100)]


def get_init_inputs():
    return []
