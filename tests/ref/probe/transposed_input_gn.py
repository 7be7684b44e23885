"""Sequence input (N, L, C) transposed to (N, C, L) (a non-contiguous view) -> GroupNorm -> relu -> back to (N, L, C)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 12)

    def forward(self, x):
        y = torch.relu(self.gn(x.transpose(1, 2)))
        return y.transpose(1, 2)


def get_inputs():
    return [torch.randn(3, 17, 12)]


def get_init_inputs():
    return []
