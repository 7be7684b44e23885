"""Conv1d -> GroupNorm -> x.tanh() -> nn.AvgPool1d(3, stride=2, padding=1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)
        self.pool = nn.AvgPool1d(3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(self.gn(self.conv(x)).tanh())


def get_inputs():
    return [torch.randn(2, 3, 31)]


def get_init_inputs():
    return []
