"""GroupNorm with a group per channel on (N, C, 1, 1) tensors (planes of one value: every output is the bias), then
a flatten and a Linear."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.gn = nn.GroupNorm(16, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.gn(self.pool(x))), 1))


def get_inputs():
    return [torch.randn(3, 16, 8, 8)]


def get_init_inputs():
    return []
