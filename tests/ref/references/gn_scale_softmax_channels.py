"""GroupNorm on the input -> * 2 -> nn.Softmax over channels: the softmax stays in PyTorch (not an op kgen fuses),
the region ends at the scale."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return self.softmax(self.gn(x) * 2.0)


def get_inputs():
    return [torch.randn(2, 16, 8, 8)]


def get_init_inputs():
    return []
