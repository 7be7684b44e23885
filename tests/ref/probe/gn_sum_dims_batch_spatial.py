"""GroupNorm -> sigmoid -> sum(dim=(0, 2, 3)): a reduction including the batch dim (per-channel over the batch)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 6)

    def forward(self, x):
        return torch.sigmoid(self.gn(x)).sum(dim=(0, 2, 3))


def get_inputs():
    return [torch.randn(4, 6, 7, 7)]


def get_init_inputs():
    return []
