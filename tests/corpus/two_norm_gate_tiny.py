"""Two norm blocks feeding a gate: two GroupNorms of one conv's output (different group counts), a tanh branch gated by a sigmoid branch, as a WaveNet-style unit over 1-D sequences."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups_a, groups_b):
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, 3, padding=2, dilation=2)
        self.norm_a = nn.GroupNorm(groups_a, channels)
        self.norm_b = nn.GroupNorm(groups_b, channels)
        self.out = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        a, b = self.conv(x).chunk(2, dim=1)
        return x + self.out(torch.tanh(self.norm_a(a)) * torch.sigmoid(self.norm_b(b)))


batch = 2
channels = 32
groups_a = 4
groups_b = 8
length = 100


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return [channels, groups_a, groups_b]
