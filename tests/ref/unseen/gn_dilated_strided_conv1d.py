"""A dilated, strided Conv1d (a TCN layer) whose output's GroupNorm is followed by dropout in eval and a residual
through a 1x1 strided conv."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(12, 24, 3, stride=2, dilation=2, padding=2)
        self.gn = nn.GroupNorm(6, 24)
        self.down = nn.Conv1d(12, 24, 1, stride=2)
        self.drop = nn.Dropout(0.2)
        self.eval()

    def forward(self, x):
        return self.drop(F.relu(self.gn(self.conv(x)))) + self.down(x)


def get_inputs():
    return [torch.randn(3, 12, 101)]


def get_init_inputs():
    return []
