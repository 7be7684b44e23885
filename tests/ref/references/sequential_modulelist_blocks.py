"""Own reference: modules reached through containers: an nn.Sequential block (conv, GroupNorm, ReLU), then an
nn.ModuleList of GroupNorms with an nn.ParameterList of per-channel scales (targets such as `block.0`, `norms.1`)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(3, channels, 3), nn.GroupNorm(4, channels), nn.ReLU())
        self.norms = nn.ModuleList([nn.GroupNorm(2, channels), nn.GroupNorm(channels, channels)])
        self.scales = nn.ParameterList([nn.Parameter(torch.randn(channels, 1, 1)) for _ in range(2)])

    def forward(self, x):
        x = self.block(x)
        x = torch.tanh(self.norms[0](x) * self.scales[0])
        return torch.sigmoid(self.norms[1](x)) * self.scales[1]


def get_inputs():
    return [torch.rand(3, 3, 12, 10)]


def get_init_inputs():
    return [8]
