"""Conv3d -> GroupNorm -> torch.relu -> nn.MaxPool3d(2) on a 7x9x11 volume (odd sizes)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 6, 3, padding=1)
        self.gn = nn.GroupNorm(3, 6)
        self.pool = nn.MaxPool3d(2)

    def forward(self, x):
        return self.pool(torch.relu(self.gn(self.conv(x))))


def get_inputs():
    return [torch.rand(2, 2, 7, 9, 11)]


def get_init_inputs():
    return []
