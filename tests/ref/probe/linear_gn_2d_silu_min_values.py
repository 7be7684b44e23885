"""Linear -> GroupNorm on (N, F) -> F.silu -> x.min(1).values."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 48)
        self.gn = nn.GroupNorm(6, 48)

    def forward(self, x):
        return F.silu(self.gn(self.fc(x))).min(1).values


def get_inputs():
    return [torch.randn(5, 20)]


def get_init_inputs():
    return []
