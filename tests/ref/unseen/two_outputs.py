"""A reference written as people write models, not tuned for: two outputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
    def forward(self, x):
        y = self.gn(x)
        return y, torch.sigmoid(y).mean(dim=(2, 3))


def get_inputs():
    return [torch.randn(2, 16, 6, 6)]


def get_init_inputs():
    return []
