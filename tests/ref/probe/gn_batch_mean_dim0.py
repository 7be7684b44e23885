"""GroupNorm -> relu -> x.mean(0): a reduction over the BATCH dim (not per-sample)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        return torch.relu(self.gn(self.conv(x))).mean(0)


def get_inputs():
    return [torch.randn(3, 3, 10, 10)]


def get_init_inputs():
    return []
