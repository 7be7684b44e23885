"""A reference written as people write models, not tuned for: softplus of a GroupNorm through a Dropout(0.0)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 32)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(F.softplus(self.gn(x)))


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
