"""GroupNorm -> BatchNorm2d (train mode, batch statistics + running stats update) -> relu."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.gn(x)))


def get_inputs():
    return [torch.randn(3, 8, 6, 6)]


def get_init_inputs():
    return []
