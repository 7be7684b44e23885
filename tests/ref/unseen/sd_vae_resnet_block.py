"""Stable diffusion's VAE ResnetBlock: Normalize (GroupNorm(32, C, eps=1e-6)), nonlinearity written x*torch.sigmoid(x),
conv, again, and a nin_shortcut 1x1 conv where the channels change."""
import torch
import torch.nn as nn


def Normalize(in_channels):
    return torch.nn.GroupNorm(num_groups=32, num_channels=in_channels, eps=1e-6, affine=True)


def nonlinearity(x):
    return x * torch.sigmoid(x)


class Model(nn.Module):
    def __init__(self, in_channels=64, out_channels=128):
        super().__init__()
        self.norm1 = Normalize(in_channels)
        self.conv1 = torch.nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.norm2 = Normalize(out_channels)
        self.dropout = torch.nn.Dropout(0.0)
        self.conv2 = torch.nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.nin_shortcut = torch.nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        h = x
        h = self.norm1(h)
        h = nonlinearity(h)
        h = self.conv1(h)
        h = self.norm2(h)
        h = nonlinearity(h)
        h = self.dropout(h)
        h = self.conv2(h)
        x = self.nin_shortcut(x)
        return x + h


def get_inputs():
    return [torch.randn(2, 64, 24, 24)]


def get_init_inputs():
    return [64, 128]
