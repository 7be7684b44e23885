import torch
import torch.nn as nn


class Model(nn.Module):
    """An encoder stage that returns its feature map while training (a dense loss reads it) and, in eval mode, the
    pooled features a classifier head reads: another output shape in each mode."""

    def __init__(self, cin, cout, groups):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm = nn.GroupNorm(groups, cout)

    def forward(self, x):
        h = torch.relu(self.norm(self.conv(x)))
        if not self.training:
            return h.mean(dim=(2, 3))
        return h


def get_inputs():
    return [torch.randn(4, 8, 14, 14)]


def get_init_inputs():
    return [8, 24, 6]
