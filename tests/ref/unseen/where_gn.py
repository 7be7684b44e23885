"""A reference written as people write models, not tuned for: where gn."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
    def forward(self, x):
        y = self.gn(x)
        return torch.where(y > 0, y, 0.1 * y).flatten(1)


def get_inputs():
    return [torch.randn(2, 16, 4, 4, 4)]


def get_init_inputs():
    return []
