"""Squeeze-and-excitation after a GroupNorm: x * sigmoid(fc2(relu(fc1(x.mean((2, 3))))))[..., None, None]."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c=32, r=4):
        super().__init__()
        self.gn = nn.GroupNorm(8, c)
        self.fc1 = nn.Linear(c, c // r)
        self.fc2 = nn.Linear(c // r, c)

    def forward(self, x):
        h = torch.relu(self.gn(x))
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(h.mean((2, 3))))))
        return h * s[..., None, None]


def get_inputs():
    return [torch.randn(4, 32, 12, 12)]


def get_init_inputs():
    return []
