"""GroupNorm32 (x.float() normalised, .type(x.dtype) back) whose value a convolution and a residual add both read:
the region is the GroupNorm alone, and its output, read only through the cast back, has the conv output's dtype."""
import torch
import torch.nn as nn


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.norm = GroupNorm32(4, 16)
        self.out = nn.Conv2d(16, 16, 1)

    def forward(self, x):
        h = self.norm(self.conv(x))
        return self.out(h) + h


def get_inputs():
    return [torch.randn(2, 8, 9, 11)]


def get_init_inputs():
    return []
