"""A reference written as people write models, not tuned for: modulelist loop."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norms = nn.ModuleList([nn.GroupNorm(4, 16) for _ in range(3)])
        self.convs = nn.ModuleList([nn.Conv2d(16, 16, 3, padding=1) for _ in range(3)])
    def forward(self, x):
        for norm, conv in zip(self.norms, self.convs):
            x = x + conv(F.silu(norm(x)))
        return x


def get_inputs():
    return [torch.randn(2, 16, 12, 12)]


def get_init_inputs():
    return []
