"""Rank-3 GroupNorm -> relu -> transpose(1, 2).mean(-1): a mean over CHANNELS via the last dim."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y.transpose(1, 2).mean(-1)


def get_inputs():
    return [torch.randn(2, 8, 7)]


def get_init_inputs():
    return []
