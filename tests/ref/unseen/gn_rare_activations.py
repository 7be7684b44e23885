"""Less common activations after GroupNorm: CELU (alpha 1.5), softshrink, tanhshrink, summed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.gn(x)
        return F.celu(y, alpha=1.5) + F.softshrink(y, 0.5) + F.tanhshrink(y)


def get_inputs():
    return [torch.randn(2, 8, 33)]


def get_init_inputs():
    return []
