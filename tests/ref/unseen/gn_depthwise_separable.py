"""A depthwise conv (groups = channels) then GroupNorm and a pointwise 1x1 conv (MobileNet-style with GroupNorm)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.gn = nn.GroupNorm(8, c)
        self.pw = nn.Conv2d(c, 2 * c, 1)

    def forward(self, x):
        return self.pw(F.relu6(self.gn(self.dw(x))))


def get_inputs():
    return [torch.randn(2, 32, 14, 14)]


def get_init_inputs():
    return []
