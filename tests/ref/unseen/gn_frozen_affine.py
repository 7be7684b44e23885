import torch
import torch.nn as nn


class Model(nn.Module):
    """A GroupNorm whose affine parameters are frozen (fine-tuning only the conv)."""

    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)
        self.norm = nn.GroupNorm(groups, channels)
        self.norm.weight.requires_grad_(False)
        self.norm.bias.requires_grad_(False)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(3, 24, 16, 16)]


def get_init_inputs():
    return [24, 6]
