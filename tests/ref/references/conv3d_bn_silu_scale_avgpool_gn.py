"""Own reference: Conv3d -> BatchNorm3d -> x * sigmoid(x) -> times a per-channel parameter -> AvgPool3d(2)
-> GroupNorm: the batch norm step with a parameter (its gradient summed per channel) and a mean pooling over
3D windows."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in, c_out, groups):
        super().__init__()
        self.conv = nn.Conv3d(c_in, c_out, 3, padding=1)
        self.bn = nn.BatchNorm3d(c_out, momentum=0.3)
        self.scale = nn.Parameter(torch.randn(c_out, 1, 1, 1) * 0.5 + 1.0)
        self.pool = nn.AvgPool3d(2)
        self.gn = nn.GroupNorm(groups, c_out)

    def forward(self, x):
        y = self.bn(self.conv(x))
        y = y * torch.sigmoid(y) * self.scale
        return self.gn(self.pool(y))


def get_inputs():
    return [torch.randn(3, 4, 6, 8, 10)]


def get_init_inputs():
    return [4, 12, 3]
