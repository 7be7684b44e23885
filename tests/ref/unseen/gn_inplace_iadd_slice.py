"""An in-place add into a slice (y[:, :4] += 1) after GroupNorm: Python reads the item, adds, and assigns it back."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        y = self.gn(x)
        y[:, :4] += 1.0
        return torch.tanh(y)


def get_inputs():
    return [torch.randn(2, 16, 5, 5)]


def get_init_inputs():
    return []
