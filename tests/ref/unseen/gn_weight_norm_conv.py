"""A weight-normalised conv (torch.nn.utils.parametrizations.weight_norm, as audio vocoders write it) before a
GroupNorm and a LeakyReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = weight_norm(nn.Conv1d(16, 32, 7, padding=3))
        self.gn = nn.GroupNorm(8, 32)

    def forward(self, x):
        return F.leaky_relu(self.gn(self.conv(x)), 0.1)


def get_inputs():
    return [torch.randn(2, 16, 200)]


def get_init_inputs():
    return []
