"""torch.lerp toward the input and torch.addcmul with a per-channel scale after a GroupNorm."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)
        self.s = nn.Parameter(torch.rand(1, 8, 1))

    def forward(self, x):
        y = torch.lerp(x, self.gn(x), 0.3)
        return torch.addcmul(x, y, self.s, value=0.5)


def get_inputs():
    return [torch.randn(4, 8, 30)]


def get_init_inputs():
    return []
