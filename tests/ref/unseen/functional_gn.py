"""A reference written as people write models, not tuned for: functional gn."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(32))
        self.b = nn.Parameter(torch.randn(32))
    def forward(self, x):
        return F.silu(F.group_norm(x, 8, self.w, self.b, 1e-5))


def get_inputs():
    return [torch.randn(4, 32, 10, 10)]


def get_init_inputs():
    return []
