"""A model built in bfloat16 (.to(torch.bfloat16) in __init__) fed bfloat16 inputs: conv, GroupNorm, SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.gn = nn.GroupNorm(4, 16)
        self.to(torch.bfloat16)

    def forward(self, x):
        return F.silu(self.gn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 8, 12, 12, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
