"""A reference written as people write models, not tuned for: seq gn."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU(), nn.Dropout(0.0))
    def forward(self, x):
        return self.block(x)


def get_inputs():
    return [torch.randn(2, 8, 12, 12)]


def get_init_inputs():
    return []
