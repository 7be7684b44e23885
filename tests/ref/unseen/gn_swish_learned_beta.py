"""Swish with a learned beta (a 0-dim parameter): y * sigmoid(beta * y) after GroupNorm, then a channel mean."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(3, 12)
        self.beta = nn.Parameter(torch.tensor(1.25))

    def forward(self, x):
        y = self.gn(x)
        return (y * torch.sigmoid(self.beta * y)).mean(dim=1)


def get_inputs():
    return [torch.randn(4, 12, 5, 5)]


def get_init_inputs():
    return []
