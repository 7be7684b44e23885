"""GroupNorm -> relu -> mean over channels then over the batch (two chained reductions, the second over dim 0)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y.mean(dim=1).mean(dim=0)


def get_inputs():
    return [torch.randn(3, 8, 5, 5)]


def get_init_inputs():
    return []
