"""A learned one-value gate and a per-channel shift after a GroupNorm (ReZero-style residual scaling)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)
        self.alpha = nn.Parameter(torch.tensor(0.3))
        self.shift = nn.Parameter(torch.randn(1, channels, 1, 1) * 0.1)

    def forward(self, x):
        return x + self.alpha * torch.tanh(self.norm(x) + self.shift)


def get_inputs():
    return [torch.randn(3, 16, 9, 7)]


def get_init_inputs():
    return [16]
