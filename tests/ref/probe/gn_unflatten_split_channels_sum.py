"""GroupNorm -> relu -> unflatten(1, (2, 4)).sum(2): channels split in (2, 4) and summed over the inner 4 (strided channels)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y.unflatten(1, (2, 4)).sum(2)


def get_inputs():
    return [torch.randn(3, 8, 5, 5)]


def get_init_inputs():
    return []
