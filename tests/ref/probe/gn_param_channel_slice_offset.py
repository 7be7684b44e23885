"""GroupNorm then y * self.p[:, 4:12] where p is (1, 16, 1, 1): a per-channel parameter read at an offset."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)
        self.p = nn.Parameter(torch.randn(1, 16, 1, 1))

    def forward(self, x):
        return self.gn(x) * self.p[:, 4:12] + self.p[:, :8]


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
