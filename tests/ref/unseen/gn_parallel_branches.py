"""Two GroupNorms of the same input in parallel branches (different group counts), their products summed, and a
buffer scale registered in __init__."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.GroupNorm(2, 16)
        self.b = nn.GroupNorm(8, 16, affine=False)
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, x):
        return torch.tanh(self.a(x)) * self.scale + torch.relu(self.b(x))


def get_inputs():
    return [torch.randn(4, 16, 10, 10)]


def get_init_inputs():
    return []
