"""A reference written as people write models, not tuned for: buffer scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 16).view(1, 16, 1, 1))
    def forward(self, x):
        return F.gelu(self.gn(x) * self.scale)


def get_inputs():
    return [torch.randn(2, 16, 10, 10)]


def get_init_inputs():
    return []
