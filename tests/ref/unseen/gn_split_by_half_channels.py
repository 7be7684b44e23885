"""A GLU-style gate: split the channels in half with torch.split(x, x.shape[1] // 2, dim=1), GroupNorm one half."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 32, 3, padding=1)
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        h = self.conv(x)
        a, b = torch.split(h, h.shape[1] // 2, dim=1)
        return self.gn(a) * torch.sigmoid(b)


def get_inputs():
    return [torch.randn(2, 8, 16, 16)]


def get_init_inputs():
    return []
