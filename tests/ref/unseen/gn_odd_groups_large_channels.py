"""An odd group count over many channels (7 groups of 37 channels) on a 3-D (N, C, L) tensor, then log_softmax over
channels."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(7, 259)

    def forward(self, x):
        return F.log_softmax(self.gn(x), dim=1)


def get_inputs():
    return [torch.randn(3, 259, 11)]


def get_init_inputs():
    return []
