import torch
import torch.nn as nn


class StraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4.0) / 4.0

    @staticmethod
    def backward(ctx, grad):
        return grad


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        return StraightThrough.apply(self.gn(x))


def get_inputs():
    return [torch.rand(2, 8, 4, 4)]


def get_init_inputs():
    return []
