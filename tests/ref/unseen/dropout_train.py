"""A reference written as people write models, not tuned for: dropout train."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.drop = nn.Dropout(0.1)
    def forward(self, x):
        return self.drop(F.silu(self.gn(x)))


def get_inputs():
    return [torch.randn(2, 16, 10, 10)]


def get_init_inputs():
    return []
