"""GroupNorm -> relu -> flatten(0, 1) (batch and channels merged) -> amax(0): max over N*C planes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y.flatten(0, 1).amax(0)


def get_inputs():
    return [torch.randn(3, 8, 5, 5)]


def get_init_inputs():
    return []
