"""Two GroupNorms with 2 and 8 groups on the same conv output, their activations added, then channel mean."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn_a = nn.GroupNorm(2, 8)
        self.gn_b = nn.GroupNorm(8, 8)

    def forward(self, x):
        h = self.conv(x)
        return (torch.tanh(self.gn_a(h)) + torch.sigmoid(self.gn_b(h))).mean(1)


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
