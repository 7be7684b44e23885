"""Own reference: a GroupNorm on the model's input (no library op before it), a Conv3d after, then a
second GroupNorm with per-channel scale and AvgPool3d(2) on odd sizes (floor)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, out_channels, groups):
        super().__init__()
        self.gn_in = nn.GroupNorm(groups, channels)
        self.conv = nn.Conv3d(channels, out_channels, 3)
        self.gn = nn.GroupNorm(2, out_channels)
        self.scale = nn.Parameter(torch.randn(out_channels, 1, 1, 1))
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        x = nn.functional.leaky_relu(self.gn_in(x), 0.2)
        x = self.conv(x)
        x = self.gn(x) * self.scale
        return self.pool(x)


def get_inputs():
    return [torch.rand(2, 6, 7, 9, 8)]


def get_init_inputs():
    return [6, 10, 3]
