"""GroupNorm -> F.softplus(beta=2, threshold=10) -> torch.min(x, dim=-2).values on a 5D input."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 6, 3)
        self.gn = nn.GroupNorm(3, 6)

    def forward(self, x):
        y = F.softplus(self.gn(self.conv(x)), beta=2, threshold=10)
        return torch.min(y, dim=-2).values


def get_inputs():
    return [torch.randn(2, 2, 7, 8, 9)]


def get_init_inputs():
    return []
