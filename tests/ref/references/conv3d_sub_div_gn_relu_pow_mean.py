"""Conv3d -> subtract a broadcast parameter -> divide by a scalar -> GroupNorm -> 1 - relu(x) ** 2 -> mean over
the spatial dims: a prologue with a parameter of shape (1, C, 1, 1, 1)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 8, 3, padding=1)
        self.gn = nn.GroupNorm(4, 8)
        self.shift = nn.Parameter(torch.randn(1, 8, 1, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = (x - self.shift) / 2.0
        x = self.gn(x)
        x = 1.0 - torch.relu(x) ** 2
        return x.mean(dim=(2, 3, 4))


def get_inputs():
    return [torch.randn(2, 2, 5, 6, 7)]


def get_init_inputs():
    return []
