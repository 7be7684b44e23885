"""Conv3d -> GroupNorm -> hardsigmoid -> * 3 -> AvgPool3d(2) over odd sizes (8 x 7 x 10: remainders in two dims)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 6, 2)
        self.gn = nn.GroupNorm(3, 6)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        x = nn.functional.hardsigmoid(self.gn(self.conv(x))) * 3.0
        return self.pool(x)


def get_inputs():
    return [torch.randn(2, 3, 9, 8, 11)]


def get_init_inputs():
    return []
