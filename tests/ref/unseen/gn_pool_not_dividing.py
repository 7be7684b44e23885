"""Pooling windows that do not divide the size: max_pool1d(3, stride 3) of a length 10, avg_pool3d(2) of odd sizes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn1 = nn.GroupNorm(2, 6)
        self.gn3 = nn.GroupNorm(2, 4)

    def forward(self, x, v):
        a = F.max_pool1d(torch.relu(self.gn1(x)), 3, 3)
        b = F.avg_pool3d(torch.tanh(self.gn3(v)), 2)
        return a.sum() + b.sum()


def get_inputs():
    return [torch.randn(2, 6, 10), torch.randn(2, 4, 5, 7, 9)]


def get_init_inputs():
    return []
