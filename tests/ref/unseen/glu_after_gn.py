"""GroupNorm, then a gated linear unit over the channels (F.glu), as gated conv blocks write it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, 2 * channels)

    def forward(self, x):
        return F.glu(self.norm(self.conv(x)), dim=1)


def get_inputs():
    return [torch.randn(2, 16, 20, 18)]


def get_init_inputs():
    return [16, 8]
