"""Audio / transformer layout: the input is (N, T, C); GroupNorm needs (N, C, T), so transpose in and out, with a
pointwise feed-forward (Linear on the last dim) after."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.norm = nn.GroupNorm(1, dim)
        self.ff = nn.Linear(dim, dim * 2)

    def forward(self, x):
        h = self.norm(x.transpose(1, 2)).transpose(1, 2)
        return self.ff(F.gelu(h, approximate="tanh"))


def get_inputs():
    return [torch.randn(4, 60, 32)]


def get_init_inputs():
    return []
