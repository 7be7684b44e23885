"""GroupNorm -> relu -> reshape(N, C//2, -1): two channels per row -> amax(-1) (a reduction over channel PAIRS x plane)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y.reshape(3, 4, -1).amax(-1)


def get_inputs():
    return [torch.randn(3, 8, 5, 5)]


def get_init_inputs():
    return []
