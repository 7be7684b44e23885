"""A diffusion UNet residual block: GroupNorm, SiLU, 3x3 conv, the time embedding through a Linear added per (sample, channel), GroupNorm, SiLU, dropout, 3x3 conv, a 1x1 skip."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels, eps=1e-6)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels, eps=1e-6)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.skip = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        return self.skip(x) + h


batch = 2
in_channels = 32
out_channels = 64
temb_channels = 128
groups = 8
size = 8


def get_inputs():
    return [torch.randn(batch, in_channels, size, size), torch.randn(batch, temb_channels)]


def get_init_inputs():
    return [in_channels, out_channels, temb_channels, groups]
