"""A reference written as people write models: the output divided by its largest magnitude read with .item()
(a Python number only the data gives)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        y = self.gn(x)
        m = y.abs().max().item()
        return y / (m + 1.0)


def get_inputs():
    return [torch.randn(2, 8, 4)]


def get_init_inputs():
    return []
