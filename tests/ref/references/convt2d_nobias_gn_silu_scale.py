"""Own reference: ConvTranspose2d without a bias (padding 1, stride 1) -> GroupNorm -> SiLU -> a per-channel scale.
With --conv fused, kgen's conv has no prologue parameter to add, and the one-launch forward applies an epilogue
with a parameter; 24 output channels (a partial channel tile of the conv), odd planes (17 x 11)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.gn = nn.GroupNorm(groups, out_channels)
        self.scale = nn.Parameter(torch.rand(out_channels, 1, 1) + 0.5)

    def forward(self, x):
        return F.silu(self.gn(self.up(x))) * self.scale


def get_inputs():
    return [torch.rand(3, 12, 17, 11)]


def get_init_inputs():
    return [12, 24, 6]
