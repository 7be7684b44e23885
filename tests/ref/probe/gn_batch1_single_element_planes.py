"""GroupNorm(2, 8) on a (1, 8, 1, 1) input: 4 values per group, 1x1 planes; relu then mean over the plane."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y.mean(dim=(2, 3))


def get_inputs():
    return [torch.randn(1, 8, 1, 1)]


def get_init_inputs():
    return []
