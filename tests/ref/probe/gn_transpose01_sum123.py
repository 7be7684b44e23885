"""GroupNorm -> relu -> transpose(0, 1).sum(dim=(1, 2, 3)): per channel over batch and plane (the batch moved)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y.transpose(0, 1).sum(dim=(1, 2, 3))


def get_inputs():
    return [torch.randn(3, 8, 5, 5)]


def get_init_inputs():
    return []
