"""forward(x, y): GroupNorm(conv(x)) * sigmoid(y) + y, y a second model input of the GN output's shape."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x, y):
        z = self.gn(self.conv(x))
        return z * torch.sigmoid(y) + y


def get_inputs():
    return [torch.rand(2, 3, 12, 12), torch.randn(2, 8, 12, 12)]


def get_init_inputs():
    return []
