"""forward(self, x, scale=2.0, shift=1): extra non-tensor arguments with defaults, not passed by get_inputs."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x, scale=2.0, shift=1):
        return torch.tanh(self.gn(x) * scale + shift)


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
