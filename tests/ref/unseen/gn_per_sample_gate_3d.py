"""A 3-D block whose output is gated per sample (a stochastic-depth style keep factor as (N, 1, 1, 1, 1)) after a
GroupNorm and SiLU, then a residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)

    def forward(self, x, keep):
        return x + F.silu(self.norm(x)) * keep.view(-1, 1, 1, 1, 1)


def get_inputs():
    return [torch.randn(3, 16, 5, 6, 7), torch.rand(3)]


def get_init_inputs():
    return []
