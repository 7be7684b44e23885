import torch
import torch.fx
import torch.nn as nn

from copy import copy as shallow

torch.fx.wrap("shallow")


class Model(nn.Module):
    def __init__(self, c, g):
        super().__init__()
        self.gn = nn.GroupNorm(g, c)

    def forward(self, x):
        return shallow(self.gn(x)) * 2


def get_inputs():
    return [torch.rand(2, 8, 4, 4)]


def get_init_inputs():
    return [8, 2]
