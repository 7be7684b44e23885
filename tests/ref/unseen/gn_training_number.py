import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A residual conv block whose scale differs between the modes (a number chosen by self.training), with dropout
    that follows the mode as usual."""

    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, channels)
        self.p = 0.2

    def forward(self, x):
        h = F.silu(self.norm(self.conv(x)))
        h = h * (0.8 if self.training else 1.0)
        h = F.dropout(h, self.p, training=self.training)
        return x + h


def get_inputs():
    return [torch.randn(3, 16, 12, 10)]


def get_init_inputs():
    return [16, 4]
