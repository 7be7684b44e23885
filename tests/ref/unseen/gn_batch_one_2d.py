"""GroupNorm of a (1, C) tensor: one sample, no spatial dims, after a Linear; ELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 48)
        self.gn = nn.GroupNorm(6, 48)

    def forward(self, x):
        return F.elu(self.gn(self.fc(x)))


def get_inputs():
    return [torch.randn(1, 20)]


def get_init_inputs():
    return []
