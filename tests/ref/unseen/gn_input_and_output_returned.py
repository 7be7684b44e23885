"""Returns the conv output (the GroupNorm's input) beside the activated GroupNorm output (a feature pyramid)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 3, stride=2, padding=1)
        self.gn = nn.GroupNorm(3, 12)

    def forward(self, x):
        f = self.conv(x)
        return f, F.hardswish(self.gn(f))


def get_inputs():
    return [torch.randn(2, 3, 20, 20)]


def get_init_inputs():
    return []
