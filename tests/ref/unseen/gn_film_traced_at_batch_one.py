"""FiLM from a style vector, written for one sample at a time: get_inputs() gives a batch of 1, so the trace sees the
per-(sample, channel) scale and shift as (1, C, 1, 1); the model runs on other batches too."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels=32, style_dim=16):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.GroupNorm(8, channels, affine=False)
        self.to_scale = nn.Linear(style_dim, channels)
        self.to_shift = nn.Linear(style_dim, channels)

    def forward(self, x, style):
        h = self.norm(self.conv(x))
        scale = self.to_scale(style).unsqueeze(-1).unsqueeze(-1)
        shift = self.to_shift(style).unsqueeze(-1).unsqueeze(-1)
        return F.gelu(h * (1 + scale) + shift)


def get_inputs():
    return [torch.randn(1, 32, 12, 10), torch.randn(1, 16)]


def get_init_inputs():
    return []
