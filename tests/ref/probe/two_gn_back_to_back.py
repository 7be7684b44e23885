"""Two GroupNorms back to back (different groups) -> tanh."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn1 = nn.GroupNorm(4, 12)
        self.gn2 = nn.GroupNorm(3, 12, eps=1e-3)

    def forward(self, x):
        return torch.tanh(self.gn2(self.gn1(x)))


def get_inputs():
    return [torch.randn(2, 12, 8, 10)]


def get_init_inputs():
    return []
