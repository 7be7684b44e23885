"""GroupNorm -> F.leaky_relu(negative_slope=0.2) -> nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(2, 8)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)

    def forward(self, x):
        return self.pool(F.leaky_relu(self.gn(self.conv(x)), negative_slope=0.2))


def get_inputs():
    return [torch.randn(2, 3, 14, 16)]


def get_init_inputs():
    return []
