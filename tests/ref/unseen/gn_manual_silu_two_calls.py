"""SiLU spelled with the GroupNorm module called twice on the same tensor: gn(x) * torch.sigmoid(gn(x))."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        return self.gn(x) * torch.sigmoid(self.gn(x))


def get_inputs():
    return [torch.randn(2, 16, 8, 8)]


def get_init_inputs():
    return []
