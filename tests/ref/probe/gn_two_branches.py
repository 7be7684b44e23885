"""y = gn(conv(x)); relu(y) + sigmoid(y): the GN output feeds two branches that meet again."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.gn(self.conv(x))
        return torch.relu(y) + torch.sigmoid(y)


def get_inputs():
    return [torch.rand(2, 3, 14, 14)]


def get_init_inputs():
    return []
