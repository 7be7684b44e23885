import torch
import torch.nn as nn


class Model(nn.Module):
    """An element-wise op on a (1, C, 1, 1) parameter alone (its sigmoid), expanded and multiplied with the region's
    output."""

    def __init__(self):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)
        self.gate = nn.Parameter(torch.rand(1, 8, 1, 1))

    def forward(self, x):
        y = torch.tanh(self.gn(self.conv(x)))
        return y * torch.sigmoid(self.gate).expand_as(y)


def get_inputs():
    return [torch.rand(4, 3, 11, 9)]


def get_init_inputs():
    return []
