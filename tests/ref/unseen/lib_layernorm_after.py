"""A reference written as people write models, not tuned for: a GroupNorm, then a LayerNorm over the channels (a
transpose each side)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 32)
        self.ln = nn.LayerNorm(32)

    def forward(self, x):
        y = self.gn(x)
        return self.ln(y.transpose(1, 3)).transpose(1, 3)


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
