"""nn.GELU(approximate="tanh") module beside F.gelu (exact) on the same GroupNorm output."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x):
        y = self.gn(x) * 3
        return self.act(y) - F.gelu(y)


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
