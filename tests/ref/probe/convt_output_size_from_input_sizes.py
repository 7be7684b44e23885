"""ConvTranspose2d (stride 2) called with output_size computed from the input's sizes (x.size(2) * 2: Python
arithmetic, kept as it is) -> GroupNorm -> relu; the conv keeps its bias and its arguments."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1)
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.up(x, output_size=[x.size(2) * 2, x.size(3) * 2])
        return torch.relu(self.gn(y))


def get_inputs():
    return [torch.rand(2, 4, 7, 9)]


def get_init_inputs():
    return []
