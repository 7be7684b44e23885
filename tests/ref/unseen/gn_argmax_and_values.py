"""The channel argmax (an integer output) and the channel max of a GroupNorm's output, via torch.max(y, dim=1)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(5, 10)

    def forward(self, x):
        values, indices = torch.max(torch.relu(self.gn(x)), dim=1)
        return values, indices


def get_inputs():
    return [torch.randn(4, 10, 7, 7)]


def get_init_inputs():
    return []
