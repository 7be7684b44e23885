"""Linear on (N, L, F) -> transpose(1, 2) -> GroupNorm on (N, C, L) -> relu -> sum over L."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 12)
        self.gn = nn.GroupNorm(3, 12)

    def forward(self, x):
        y = self.fc(x).transpose(1, 2)
        return torch.relu(self.gn(y)).sum(dim=2)


def get_inputs():
    return [torch.randn(2, 20, 16)]


def get_init_inputs():
    return []
