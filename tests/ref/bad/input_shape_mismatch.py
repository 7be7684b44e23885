import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        return torch.relu(self.gn(x))


def get_inputs():
    return [torch.rand(2, 12, 9, 9)]


def get_init_inputs():
    return []
