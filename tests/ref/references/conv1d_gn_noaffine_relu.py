"""Own reference: Conv1d -> GroupNorm(affine=False) -> ReLU, rank 3, odd length."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)
        self.norm = nn.GroupNorm(groups, out_channels, affine=False)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.rand(6, 5, 37)]


def get_init_inputs():
    return [5, 12, 3, 3]
