import torch
import torch.nn as nn
import torch.nn.functional as F


class NoisyBlock(nn.Module):
    """A 1-D conv block that, while training, adds a fixed per-channel jitter (a learned one here, to keep it
    deterministic) before its norm; in eval mode it normalises the conv's output as it is."""

    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 5, padding=2)
        self.norm = nn.GroupNorm(groups, channels)
        self.jitter = nn.Parameter(torch.randn(channels, 1) * 0.05)

    def forward(self, x):
        h = self.conv(x)
        if self.training:
            h = h + self.jitter
        return F.gelu(self.norm(h))


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.block1 = NoisyBlock(channels, groups)
        self.block2 = NoisyBlock(channels, groups)

    def forward(self, x):
        return self.block2(self.block1(x)) + x


def get_inputs():
    return [torch.randn(2, 32, 50)]


def get_init_inputs():
    return [32, 8]
