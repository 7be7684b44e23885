"""A 0-d nn.Parameter (shape ()) multiplies before GroupNorm; a (C,) parameter viewed (C,1,1) divides after."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)
        self.alpha = nn.Parameter(torch.tensor(1.5))
        self.d = nn.Parameter(torch.rand(8) + 0.5)

    def forward(self, x):
        x = self.gn(self.alpha * self.conv(x))
        return torch.sigmoid(x / self.d.view(-1, 1, 1))


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
