"""GroupNorm on a transposed non-contiguous (N, C, L) view of an (N, L, C) input, then amax over L."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 6)

    def forward(self, x):
        return self.gn(x.transpose(1, 2)).amax(dim=-1)


def get_inputs():
    return [torch.randn(2, 9, 6)]


def get_init_inputs():
    return []
