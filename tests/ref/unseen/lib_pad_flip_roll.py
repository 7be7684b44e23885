"""A reference written as people write models, not tuned for: GELU of a GroupNorm, padded, flipped and rolled."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 32)

    def forward(self, x):
        y = F.gelu(self.gn(x))
        return torch.roll(torch.flip(F.pad(y, (1, 1, 1, 1)), [3]), 1, 2)


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
