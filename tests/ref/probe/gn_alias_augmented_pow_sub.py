"""z = y * 1; w = z; z **= 2; z -= 0.5; return w + z (augmented ops through an alias: w sees both)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.gn(x)
        z = y * 1
        w = z
        z **= 2
        z -= 0.5
        return w + z


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
