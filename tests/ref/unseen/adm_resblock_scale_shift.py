"""Guided diffusion's ResBlock with use_scale_shift_norm: GroupNorm32, SiLU, conv; the time embedding through SiLU and
a Linear into a scale and a shift; out_norm(h) * (1 + scale) + shift, SiLU, dropout, conv; a 1x1 skip conv."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class Model(nn.Module):
    def __init__(self, channels=64, emb_channels=128, out_channels=96):
        super().__init__()
        self.in_layers = nn.Sequential(GroupNorm32(32, channels), nn.SiLU(), nn.Conv2d(channels, out_channels, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, 2 * out_channels))
        self.out_norm = GroupNorm32(32, out_channels)
        self.out_rest = nn.Sequential(nn.SiLU(), nn.Dropout(p=0.0), nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.skip_connection = nn.Conv2d(channels, out_channels, 1)

    def forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        while len(emb_out.shape) < len(h.shape):
            emb_out = emb_out[..., None]
        scale, shift = torch.chunk(emb_out, 2, dim=1)
        h = self.out_norm(h) * (1 + scale) + shift
        h = self.out_rest(h)
        return self.skip_connection(x) + h


def get_inputs():
    return [torch.randn(2, 64, 16, 16), torch.randn(2, 128)]


def get_init_inputs():
    return []
