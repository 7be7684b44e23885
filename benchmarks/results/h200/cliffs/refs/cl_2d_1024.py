"""GroupNorm then GELU, (32, 256, 16,16), 64 groups: a resident-backward probe."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return F.gelu(self.norm(x))


def get_inputs():
    return [torch.randn(32, 256, 16,16)]


def get_init_inputs():
    return [256, 64]
