"""A stack of frames given as one tensor (T, N, C, L) and iterated in Python (`for x in xs`), each frame normalised
and activated, the frames summed with Python's sum()."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, xs):
        return sum(torch.relu(self.gn(x)) for x in xs)


def get_inputs():
    return [torch.randn(3, 2, 8, 4)]


def get_init_inputs():
    return []
