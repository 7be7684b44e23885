"""Conv2d -> GroupNorm -> F.hardtanh(x, -2, 3) -> nn.Hardtanh(-1.5, 2.5) -> F.max_pool2d(x, 2) on a 15x15 plane (odd: last row/col dropped)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 12, 3)
        self.gn = nn.GroupNorm(3, 12)
        self.ht = nn.Hardtanh(-1.5, 2.5)

    def forward(self, x):
        x = self.gn(self.conv(x))
        x = F.hardtanh(x, -2, 3)
        x = self.ht(x)
        return F.max_pool2d(x, 2)


def get_inputs():
    return [torch.rand(2, 4, 17, 17)]


def get_init_inputs():
    return []
