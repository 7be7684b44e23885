"""F.group_norm without weight/bias, eps as keyword 1e-3 -> torch.sigmoid -> x.sigmoid() -> x.view(N, -1).mean(1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        y = F.group_norm(x, self.groups, eps=1e-3)
        y = torch.sigmoid(y).sigmoid()
        return y.view(y.size(0), -1).mean(1)


def get_inputs():
    return [torch.randn(4, 10, 9, 11)]


def get_init_inputs():
    return [5]
