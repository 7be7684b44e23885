"""A reference written as people write models, not tuned for: SiLU of a GroupNorm, then an InstanceNorm2d."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 32)
        self.inorm = nn.InstanceNorm2d(32)

    def forward(self, x):
        return self.inorm(F.silu(self.gn(x)))


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
