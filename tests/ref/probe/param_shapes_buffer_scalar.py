"""Per-channel parameters in three shapes ((C,1,1), (1,C,1,1), a (C,1,1) buffer) and a scalar (1,) parameter around a GroupNorm."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3)
        self.gn = nn.GroupNorm(2, c)
        self.a = nn.Parameter(torch.randn(c, 1, 1))
        self.b = nn.Parameter(torch.randn(1, c, 1, 1))
        self.s = nn.Parameter(torch.tensor([0.7]))
        self.register_buffer("shift", torch.linspace(-1, 1, c).view(c, 1, 1))

    def forward(self, x):
        x = self.conv(x) * self.s
        x = self.gn(x)
        x = x * self.a + self.b
        x = torch.relu(x - self.shift)
        return x


def get_inputs():
    return [torch.rand(2, 3, 9, 9)]


def get_init_inputs():
    return [6]
