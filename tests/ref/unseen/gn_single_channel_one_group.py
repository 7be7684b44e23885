"""GroupNorm of one channel in one group over (N, 1, H, W) (a mono image), then sigmoid."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(1, 1)

    def forward(self, x):
        return torch.sigmoid(self.gn(x))


def get_inputs():
    return [torch.randn(3, 1, 17, 23)]


def get_init_inputs():
    return []
