"""A grouped 3D convolution, GroupNorm with as many groups, SELU, Dropout3d (eval: identity)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(16, 32, 3, padding=1, groups=4)
        self.gn = nn.GroupNorm(4, 32)
        self.act = nn.SELU()
        self.drop = nn.Dropout3d(0.1)

    def forward(self, x):
        return self.drop(self.act(self.gn(self.conv(x))))


def get_inputs():
    return [torch.randn(2, 16, 6, 10, 9)]


def get_init_inputs():
    return []
