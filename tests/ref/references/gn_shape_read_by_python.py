"""Python that reads shapes while forward runs, as model code does: a branch on the rank (`if x.dim() == 3`), a scale
from a size through int(), a loop count from len(x.shape), a loop over x.shape[2:]. torch.fx alone cannot trace it; kgen answers from the
reference's input shapes and guards each answer in the emitted file (kgen/ref/concrete.py)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        if x.dim() == 3:
            x = x.unsqueeze(-1)
        scale = int(x.shape[-1]) ** -0.5
        y = self.gn(x * scale)
        for _ in range(len(x.shape) - 3):
            y = F.silu(y)
        plane = 1
        for size in x.shape[2:]:
            plane = plane * size
        return y.reshape(y.shape[0], y.shape[1], plane)


def get_inputs():
    return [torch.randn(2, 8, 6, 5)]


def get_init_inputs():
    return []
