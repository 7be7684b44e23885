"""Casts written as model code writes them: x.to(dtype=self.gn.weight.dtype), .type_as, x.new_zeros for a padding
column, torch.flatten then a Linear head."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 10)
        self.head = nn.Linear(10 * 7, 5)

    def forward(self, x):
        h = self.gn(x.to(dtype=self.gn.weight.dtype)).type_as(x)
        h = torch.cat([h, h.new_zeros(h.shape[0], h.shape[1], 1)], dim=2)
        return self.head(torch.flatten(torch.relu(h), 1))


def get_inputs():
    return [torch.randn(6, 10, 6)]


def get_init_inputs():
    return []
