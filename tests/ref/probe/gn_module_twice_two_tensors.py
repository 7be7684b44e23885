"""One GroupNorm module applied to two different tensors (self.gn(a) + self.gn(b))."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(3, 8, 1)
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        return torch.relu(self.gn(self.conv1(x))) + torch.sigmoid(self.gn(self.conv2(x)))


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return []
