"""The group count worked out in forward from the input's shape, as code written for any width does."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, per_group):
        super().__init__()
        self.per_group = per_group
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return F.silu(F.group_norm(x, x.shape[1] // self.per_group, self.weight, self.bias, 1e-5))


def get_inputs():
    return [torch.randn(4, 48, 10, 10)]


def get_init_inputs():
    return [48, 8]
