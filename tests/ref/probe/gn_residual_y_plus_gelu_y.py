"""y = GroupNorm(conv(x)); y + F.gelu(y): the GroupNorm output read twice in one expression."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 3)
        self.gn = nn.GroupNorm(3, 12)

    def forward(self, x):
        y = self.gn(self.conv(x))
        return y + F.gelu(y)


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
