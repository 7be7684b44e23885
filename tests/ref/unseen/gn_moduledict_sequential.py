"""Blocks held in an nn.ModuleDict of nn.Sequential (GroupNorm, Mish, Conv3d) chosen by name in forward."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({
            "down": nn.Sequential(nn.GroupNorm(2, 8), nn.Mish(), nn.Conv3d(8, 16, 3, stride=2, padding=1)),
            "mid": nn.Sequential(nn.GroupNorm(4, 16), nn.Mish(), nn.Conv3d(16, 16, 3, padding=1)),
        })

    def forward(self, x):
        for name in ("down", "mid"):
            x = self.blocks[name](x)
        return x


def get_inputs():
    return [torch.randn(2, 8, 8, 12, 12)]


def get_init_inputs():
    return []
