"""A reference written as people write models, not tuned for: Mish of a GroupNorm over flattened pixels, then a
ConvTranspose1d."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 32)
        self.ct = nn.ConvTranspose1d(32, 16, 4, 2)

    def forward(self, x):
        return self.ct(F.mish(self.gn(x.flatten(2))))


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
