"""GroupNorm on (N, C, 1, 1) planes (one value a channel) -> x.relu() -> torch.flatten(x, 1)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 12)

    def forward(self, x):
        x = self.gn(x).relu()
        return torch.flatten(x, 1)


def get_inputs():
    return [torch.randn(8, 12, 1, 1)]


def get_init_inputs():
    return []
