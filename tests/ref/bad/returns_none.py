import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        y = self.gn(x)


def get_inputs():
    return [torch.randn(2, 8, 4)]


def get_init_inputs():
    return []
