"""F.group_norm called with every argument by keyword, groups from an attribute, then reflect padding and a conv."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels=24, groups=6):
        super().__init__()
        self.groups = groups
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.conv = nn.Conv2d(channels, channels, 3)

    def forward(self, x):
        y = F.group_norm(input=x, num_groups=self.groups, weight=self.weight, bias=self.bias, eps=1e-6)
        y = F.silu(y, inplace=True)
        y = F.pad(y, (1, 1, 1, 1), mode="reflect")
        return self.conv(y)


def get_inputs():
    return [torch.randn(2, 24, 14, 14)]


def get_init_inputs():
    return []
