"""A learned exponent (a one-value parameter) applied to the rectified GroupNorm output: relu(y) ** p."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)
        self.p = nn.Parameter(torch.tensor(1.5))

    def forward(self, x):
        return torch.relu(self.gn(x)) ** self.p + 1e-3


def get_inputs():
    return [torch.randn(2, 8, 16)]


def get_init_inputs():
    return []
