import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c, g):
        super().__init__()
        self.gn = nn.GroupNorm(g, c)

    def forward(self, x):
        return torch.cumsum(self.gn(x), dim=1)


def get_inputs():
    return [torch.rand(2, 8, 4, 4)]


def get_init_inputs():
    return [8, 2]
