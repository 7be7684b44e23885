"""Video frames given as (N, T, C, H, W): permuted to (N, C, T, H, W) for a GroupNorm and a Conv3d, permuted back."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.conv = nn.Conv3d(16, 16, (3, 1, 1), padding=(1, 0, 0))

    def forward(self, x):
        h = x.permute(0, 2, 1, 3, 4)
        h = self.conv(F.silu(self.gn(h)))
        return h.permute(0, 2, 1, 3, 4)


def get_inputs():
    return [torch.randn(2, 5, 16, 8, 8)]


def get_init_inputs():
    return []
