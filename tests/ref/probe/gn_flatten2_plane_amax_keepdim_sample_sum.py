"""Reductions through an (N, C, spatial) view: x.flatten(2).amax(-1, keepdim=True) and x.view(n, c, -1).sum((1, 2), keepdim=True), 5-D input."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)
        self.gn_a = nn.GroupNorm(4, 8)
        self.gn_b = nn.GroupNorm(2, 8)

    def forward(self, x):
        h = self.conv(x)
        a = torch.tanh(self.gn_a(h)).flatten(2).amax(-1, keepdim=True)
        b = F.silu(self.gn_b(h))
        return a, b.view(b.size(0), b.size(1), -1).sum((1, 2), keepdim=True)


def get_inputs():
    return [torch.randn(2, 3, 7, 8, 9)]


def get_init_inputs():
    return []
