"""Activations with their arguments: GELU tanh, softplus(beta=2, threshold=10), ELU(alpha=0.5), hardtanh(-2, 2),
threshold(0.1, 20), chained after one GroupNorm and summed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(3, 12)

    def forward(self, x):
        y = self.gn(x)
        a = F.gelu(y, approximate="tanh") + F.softplus(y, beta=2.0, threshold=10.0)
        b = F.elu(y, alpha=0.5) * F.hardtanh(y, -2.0, 2.0)
        return a + b + F.threshold(y, 0.1, 20.0)


def get_inputs():
    return [torch.randn(3, 12, 10)]


def get_init_inputs():
    return []
