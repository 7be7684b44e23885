"""A ResNet basic block as torchvision writes it, GroupNorm for BatchNorm: out = relu(norm(conv(x))), then out += identity
in place and a ReLU module applied in place."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.gn1 = nn.GroupNorm(groups, channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.gn2 = nn.GroupNorm(groups, channels)

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.gn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.gn2(out)
        out += identity
        out = self.relu(out)
        return out


def get_inputs():
    return [torch.randn(2, 32, 12, 12)]


def get_init_inputs():
    return [32, 8]
