"""torch.addcdiv and torch.lerp with per-channel parameters around a GroupNorm."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.gn = nn.GroupNorm(16, channels)
        self.num = nn.Parameter(torch.randn(1, channels, 1))
        self.den = nn.Parameter(torch.rand(1, channels, 1) + 1.0)
        self.target = nn.Parameter(torch.randn(1, channels, 1))

    def forward(self, x):
        y = torch.addcdiv(self.gn(x), self.num, self.den, value=0.5)
        return torch.lerp(y, self.target, 0.25)


def get_inputs():
    return [torch.randn(32, 256, 4096)]


def get_init_inputs():
    return [256]
