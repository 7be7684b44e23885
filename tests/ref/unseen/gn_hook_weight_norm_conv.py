"""The hook-based torch.nn.utils.weight_norm (older vocoders and wav2vec 2.0's positional conv write it so): the
weight recomputed by a forward pre-hook from weight_g and weight_v, then GroupNorm and GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(8, 16, 5, padding=2), dim=2)
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        return F.gelu(self.gn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 8, 64)]


def get_init_inputs():
    return []
