"""A reference written as people write models, not tuned for: a GroupNorm over an image, its pixels as a sequence
through nn.MultiheadAttention."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 32)
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x):
        h = self.gn(x).flatten(2).transpose(1, 2)
        o, _ = self.mha(h, h, h)
        return o


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
