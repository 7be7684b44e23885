"""One nn.Sequential(Conv2d, GroupNorm, SiLU, MaxPool2d(2)) holds the whole model."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.GroupNorm(4, 8), nn.SiLU(), nn.MaxPool2d(2))

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(2, 3, 14, 14)]


def get_init_inputs():
    return []
