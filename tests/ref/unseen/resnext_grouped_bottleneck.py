"""A ResNeXt bottleneck with GroupNorm: 1x1, grouped 3x3 (32 groups of 4 channels), 1x1, each normalised, a
projection shortcut."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, cin=64, width=128, cout=128):
        super().__init__()
        self.c1 = nn.Conv2d(cin, width, 1, bias=False)
        self.n1 = nn.GroupNorm(32, width)
        self.c2 = nn.Conv2d(width, width, 3, padding=1, groups=32, bias=False)
        self.n2 = nn.GroupNorm(32, width)
        self.c3 = nn.Conv2d(width, cout, 1, bias=False)
        self.n3 = nn.GroupNorm(32, cout)
        self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.GroupNorm(32, cout))

    def forward(self, x):
        h = F.relu(self.n1(self.c1(x)))
        h = F.relu(self.n2(self.c2(h)))
        h = self.n3(self.c3(h))
        return F.relu(h + self.proj(x))


def get_inputs():
    return [torch.randn(2, 64, 8, 8)]


def get_init_inputs():
    return []
