"""self.scale = 1.0 / math.sqrt(c) from an init arg, and self.shift set on the module AFTER construction-time defaults (in __init__ last line)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self, c, g):
        super().__init__()
        self.gn = nn.GroupNorm(g, c)
        self.scale = 1.0 / math.sqrt(c)
        self.k = c // g
        self.shift = 0.0
        self.shift = self.scale * 2

    def forward(self, x):
        return self.gn(x) * self.scale + self.shift * self.k


def get_inputs():
    return [torch.randn(2, 12, 5, 5)]


def get_init_inputs():
    return [12, 3]
