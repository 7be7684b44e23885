"""GroupNorm -> x / 2 -> 2 - x -> x ** 2 -> torch.rsqrt(x * x + 1) -> torch.square -> torch.abs -> x.sum(1)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        x = self.gn(x)
        x = x / 2
        x = 2 - x
        x = x ** 2
        x = torch.rsqrt(x * x + 1)
        x = torch.square(x)
        x = torch.abs(x)
        return x.sum(1)


def get_inputs():
    return [torch.randn(2, 16, 10, 6)]


def get_init_inputs():
    return []
