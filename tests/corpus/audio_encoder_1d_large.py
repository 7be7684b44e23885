"""A speech encoder's feature extractor: Conv1d with a GroupNorm of one channel per group (as wav2vec 2.0's first layer), GELU, then strided Conv1d, GroupNorm, GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv0 = nn.Conv1d(1, channels, 10, stride=5, bias=False)
        self.norm0 = nn.GroupNorm(channels, channels)
        self.conv1 = nn.Conv1d(channels, channels, 3, stride=2, bias=False)
        self.norm1 = nn.GroupNorm(groups, channels)

    def forward(self, x):
        h = F.gelu(self.norm0(self.conv0(x)))
        return F.gelu(self.norm1(self.conv1(h)))


batch = 8
channels = 512
groups = 32
length = 64000


def get_inputs():
    return [torch.randn(batch, 1, length)]


def get_init_inputs():
    return [channels, groups]
