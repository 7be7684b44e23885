"""torch.clamp with tensor bounds (per-channel min and max parameters) after a GroupNorm."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)
        self.lo = nn.Parameter(-torch.rand(1, 8, 1, 1))
        self.hi = nn.Parameter(torch.rand(1, 8, 1, 1))

    def forward(self, x):
        return torch.clamp(self.gn(x), min=self.lo, max=self.hi)


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
