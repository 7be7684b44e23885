"""GroupNorms kept in a plain Python list (not nn.ModuleList): their parameters are not the model's."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norms = [nn.GroupNorm(2, 8), nn.GroupNorm(4, 8)]

    def forward(self, x):
        for n in self.norms:
            x = torch.relu(n(x))
        return x


def get_inputs():
    return [torch.randn(2, 8, 6)]


def get_init_inputs():
    return []
