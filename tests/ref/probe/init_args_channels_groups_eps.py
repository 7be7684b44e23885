"""in_channels, out_channels, groups, eps and kernel size all come from get_init_inputs; GN -> mish -> mean dim 1."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups, eps):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.gn = nn.GroupNorm(num_groups, out_channels, eps=eps)

    def forward(self, x):
        return F.mish(self.gn(self.conv(x))).mean(dim=1)


batch_size, in_channels, out_channels, kernel_size, num_groups, eps = 2, 5, 10, 3, 5, 1e-4


def get_inputs():
    return [torch.randn(batch_size, in_channels, 12, 12)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups, eps]
