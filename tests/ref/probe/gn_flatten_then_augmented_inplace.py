"""y = GN(x).flatten(1); y += 1; y.relu_(): in-place writes to a VIEW whose base is never read again (plain data)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.gn(x).flatten(1)
        y += 1
        y.relu_()
        return y.mean(1)


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
