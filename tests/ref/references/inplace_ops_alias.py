"""kgen's own reference: in-place ops whose operand is used again. nn.ReLU(inplace=True) overwrites the
GroupNorm output, so `y + x` below is relu(gn) + relu(gn), not relu(gn) + gn; `x += ...` and `.mul_()` too."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.gn = nn.GroupNorm(groups, channels)
        self.relu = nn.ReLU(inplace=True)
        self.shift = nn.Parameter(torch.randn(channels, 1, 1))

    def forward(self, x):
        x = self.gn(self.conv(x))
        y = self.relu(x)
        y = y + x
        y += self.shift
        y.mul_(0.5)
        return y


def get_inputs():
    return [torch.rand(4, 3, 24, 20)]


def get_init_inputs():
    return [32, 8]
