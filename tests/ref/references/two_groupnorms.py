"""Own reference: two GroupNorms in one model, a Linear between them, a residual of the first GN's input."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, hidden, groups_a, groups_b):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.gn1 = nn.GroupNorm(groups_a, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.gn2 = nn.GroupNorm(groups_b, hidden, eps=1e-3)

    def forward(self, x):
        h = self.fc1(x)
        h = self.gn1(h) * 0.5 + h
        h = torch.nn.functional.silu(h)
        h = self.fc2(h)
        return torch.tanh(self.gn2(h))


def get_inputs():
    return [torch.rand(33, 40)]


def get_init_inputs():
    return [40, 96, 4, 96]
