"""Own reference: Conv2d -> GroupNorm -> MaxPool2d -> Hardtanh -> ReLU. Both ops after the pooling commute with a
max (kgen moves them into the region's epilogue, before the pooling); odd planes (the window's floor remainder)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3)
        self.gn = nn.GroupNorm(groups, cout)
        self.pool = nn.MaxPool2d(2)
        self.act = nn.Hardtanh(-0.5, 0.8)

    def forward(self, x):
        x = self.pool(self.gn(self.conv(x)))
        return F.relu(self.act(x))


def get_inputs():
    return [torch.rand(4, 3, 19, 24)]


def get_init_inputs():
    return [3, 8, 4]
