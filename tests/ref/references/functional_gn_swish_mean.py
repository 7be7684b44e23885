"""Own reference: F.group_norm (functional, with parameters), swish spelled out, mean over spatial dims
with keepdim; odd spatial size, groups 3."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.weight = nn.Parameter(torch.randn(out_channels))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.groups = groups

    def forward(self, x):
        x = self.conv(x)
        x = F.group_norm(x, 3, self.weight, self.bias, 1e-5)
        x = x * torch.sigmoid(x)
        return x.mean(dim=(2, 3), keepdim=True)


def get_inputs():
    return [torch.rand(4, 3, 13, 11)]


def get_init_inputs():
    return [3, 9, 3]
