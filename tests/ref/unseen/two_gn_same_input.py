"""A reference written as people write models, not tuned for: two gn same input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn1 = nn.GroupNorm(4, 16)
        self.gn2 = nn.GroupNorm(8, 16)
    def forward(self, x):
        return self.gn1(x) * self.gn2(x)


def get_inputs():
    return [torch.randn(2, 16, 6, 6)]


def get_init_inputs():
    return []
