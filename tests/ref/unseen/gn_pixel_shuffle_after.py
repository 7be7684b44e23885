import torch
import torch.nn as nn


class Model(nn.Module):
    """A super-resolution tail: conv to 4x the channels, GroupNorm, ReLU, then pixel_shuffle (a library op after the
    region)."""

    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels * 4, 3, padding=1)
        self.norm = nn.GroupNorm(groups, channels * 4)
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        return self.shuffle(torch.relu(self.norm(self.conv(x))))


def get_inputs():
    return [torch.randn(2, 16, 10, 14)]


def get_init_inputs():
    return [16, 8]
