"""Own reference: what Model reads from the rest of its file: an import (math), a module constant, a helper
module class and a typing annotation in __init__; and a forward argument with a default."""
import math
from typing import Optional

import torch
import torch.nn as nn

INIT_SCALE = 0.5


class ChannelScale(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(torch.full((channels, 1, 1), INIT_SCALE) + torch.rand(channels, 1, 1))

    def forward(self, x):
        return x * self.weight


class Model(nn.Module):
    def __init__(self, channels, groups: Optional[int] = None):
        super().__init__()
        self.conv = nn.Conv2d(4, channels, 3, padding=1)
        self.gn = nn.GroupNorm(groups or int(math.sqrt(channels)), channels)
        self.scale = ChannelScale(channels)

    def forward(self, x, shift=0.25):
        return torch.relu(self.scale(self.gn(self.conv(x)))) + shift


def get_inputs():
    return [torch.rand(2, 4, 9, 11)]


def get_init_inputs():
    return [16]
