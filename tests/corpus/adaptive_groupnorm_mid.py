"""Adaptive GroupNorm (a diffusion UNet's scale-shift norm): the time embedding through SiLU and a Linear gives a scale and a shift per (sample, channel); GroupNorm(x) * (1 + scale) + shift, SiLU, 3x3 conv."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, temb_channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, affine=False)
        self.emb = nn.Linear(temb_channels, 2 * channels)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x, temb):
        scale, shift = self.emb(F.silu(temb))[:, :, None, None].chunk(2, dim=1)
        return self.conv(F.silu(self.norm(x) * (1 + scale) + shift))


batch = 8
channels = 192
temb_channels = 768
groups = 32
size = 32


def get_inputs():
    return [torch.randn(batch, channels, size, size), torch.randn(batch, temb_channels)]


def get_init_inputs():
    return [channels, temb_channels, groups]
