"""A reference written as people write models, not tuned for: ReLU of a GroupNorm, unfolded into 2x2 patches."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 32)

    def forward(self, x):
        return F.unfold(F.relu(self.gn(x)), 2, stride=2)


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
