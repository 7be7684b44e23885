"""A ResNet shortcut of option A, GroupNorm for BatchNorm: the block widens its channels and the identity is padded with
zero channels made by torch.zeros(n, extra, h, w), the size given as numbers read off the tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.gn = nn.GroupNorm(8, out_channels)
        self.extra = out_channels - in_channels

    def forward(self, x):
        h = F.relu(self.gn(self.conv(x)))
        n, _, height, width = x.shape
        pad = torch.zeros(n, self.extra, height, width, device=x.device, dtype=x.dtype)
        return h + torch.cat([x, pad], dim=1)


def get_inputs():
    return [torch.randn(3, 16, 10, 12)]


def get_init_inputs():
    return [16, 32]
