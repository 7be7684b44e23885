"""nn.GroupNorm(C, C) on (N, C, L) (instance-norm like) -> nn.Hardswish -> mean(dim=-1, keepdim=True)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 10, 3)
        self.gn = nn.GroupNorm(10, 10)
        self.act = nn.Hardswish()

    def forward(self, x):
        return self.act(self.gn(self.conv(x))).mean(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(4, 3, 25)]


def get_init_inputs():
    return []
