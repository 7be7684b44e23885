"""Channels chunked in three, each chunk its own GroupNorm (a ModuleList), concatenated back, then a SELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norms = nn.ModuleList([nn.GroupNorm(2, 8) for _ in range(3)])

    def forward(self, x):
        parts = torch.chunk(x, 3, dim=1)
        return F.selu(torch.cat([n(p) for n, p in zip(self.norms, parts)], dim=1))


def get_inputs():
    return [torch.randn(2, 24, 9, 9)]


def get_init_inputs():
    return []
