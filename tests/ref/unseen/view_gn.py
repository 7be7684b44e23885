"""A reference written as people write models, not tuned for: view gn."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
    def forward(self, x):
        n, l, c = x.shape
        y = self.gn(x.transpose(1, 2)).transpose(1, 2)
        return y.reshape(n, l * c)


def get_inputs():
    return [torch.randn(2, 50, 16)]


def get_init_inputs():
    return []
