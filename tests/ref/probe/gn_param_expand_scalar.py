"""GroupNorm then y * self.p.expand(1, 8, 1, 1) ((1,1,1,1) parameter expanded) + self.q.expand_as(y)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)
        self.p = nn.Parameter(torch.randn(1, 1, 1, 1))
        self.q = nn.Parameter(torch.randn(8, 1, 1))

    def forward(self, x):
        y = self.gn(x)
        return y * self.p.expand(1, 8, 1, 1) + self.q.expand_as(y)


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
