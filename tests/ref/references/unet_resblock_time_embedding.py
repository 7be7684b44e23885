"""A diffusion-UNet residual block: GroupNorm -> SiLU -> Conv2d, plus a time embedding through a Linear,
GroupNorm -> SiLU -> Conv2d, and a 1x1 convolution on the skip path."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, embedding_dim, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time = nn.Linear(embedding_dim, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.skip = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(F.silu(t))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


batch_size = 8
in_channels = 64
out_channels = 128
embedding_dim = 256
groups = 32
size = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size), torch.randn(batch_size, embedding_dim)]


def get_init_inputs():
    return [in_channels, out_channels, embedding_dim, groups]
