"""A (C,) parameter multiplies the (N, C, H, W) GroupNorm output where W == C: it broadcasts over W (the last dim),
not per channel; it must not be fused as a per-channel parameter."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gn = nn.GroupNorm(2, c)
        self.w = nn.Parameter(torch.randn(c))
        self.v = nn.Parameter(torch.randn(c, 1))

    def forward(self, x):
        y = self.gn(x) * self.w
        return torch.sigmoid(y) + self.v


def get_inputs():
    return [torch.randn(2, 8, 8, 8)]


def get_init_inputs():
    return [8]
