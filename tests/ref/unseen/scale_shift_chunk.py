"""A diffusion block's adaptive norm: a time embedding through SiLU and a Linear, chunked into scale and shift,
applied after a GroupNorm without affine: h * (1 + scale) + shift."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, tdim):
        super().__init__()
        self.norm = nn.GroupNorm(8, channels, affine=False)
        self.emb = nn.Linear(tdim, 2 * channels)

    def forward(self, x, t):
        scale, shift = self.emb(F.silu(t)).chunk(2, dim=1)
        h = self.norm(x) * (1 + scale[:, :, None, None]) + shift[:, :, None, None]
        return F.silu(h)


def get_inputs():
    return [torch.randn(4, 32, 16, 16), torch.randn(4, 64)]


def get_init_inputs():
    return [32, 64]
