"""Zeroing some channels by slice assignment (y[:, :4] = 0) after a GroupNorm, then ReLU: the write made out of place
(the emitted file's _assigned), since the region may have saved y for its backward."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        y = self.gn(x)
        y[:, :4] = 0
        return torch.relu(y)


def get_inputs():
    return [torch.randn(2, 16, 6, 6)]


def get_init_inputs():
    return []
