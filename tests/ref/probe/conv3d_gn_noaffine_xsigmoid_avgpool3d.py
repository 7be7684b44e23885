"""Conv3d -> GroupNorm(affine=False) -> torch.sigmoid(x) * x -> nn.AvgPool3d(2)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 8, 3)
        self.gn = nn.GroupNorm(2, 8, affine=False)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        x = self.gn(self.conv(x))
        return self.pool(torch.sigmoid(x) * x)


def get_inputs():
    return [torch.randn(2, 2, 10, 10, 10)]


def get_init_inputs():
    return []
