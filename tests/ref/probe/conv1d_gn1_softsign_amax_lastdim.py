"""Conv1d -> nn.GroupNorm(1, C) on (N, C, L) -> F.softsign -> torch.amax(x, dim=-1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 10, 5)
        self.gn = nn.GroupNorm(1, 10)

    def forward(self, x):
        return torch.amax(F.softsign(self.gn(self.conv(x))), dim=-1)


def get_inputs():
    return [torch.randn(3, 4, 37)]


def get_init_inputs():
    return []
