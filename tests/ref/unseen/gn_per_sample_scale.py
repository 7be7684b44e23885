"""A reference written as people write models, not tuned for: gn per sample scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(8, 64)
    def forward(self, x, s):
        return self.gn(x) * (1 + s[:, :, None, None]) + s.mean(1)[:, None, None, None]


def get_inputs():
    return [torch.randn(2, 64, 8, 8), torch.randn(2, 64)]


def get_init_inputs():
    return []
