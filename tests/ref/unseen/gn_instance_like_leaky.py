"""A reference written as people write models, not tuned for: gn instance like leaky."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gn = nn.GroupNorm(c, c)
        self.slope = 0.2
    def forward(self, x):
        return F.leaky_relu(self.gn(x), self.slope).clamp(-1, 1)


def get_inputs():
    return [torch.randn(2, 24, 11, 13)]


def get_init_inputs():
    return [24]
