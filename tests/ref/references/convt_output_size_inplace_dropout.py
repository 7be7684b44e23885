"""Own reference: a transposed convolution called with output_size (its bias must stay with the call), then a
GroupNorm whose output an in-place dropout overwrites, then a ReLU."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1)
        self.gn = nn.GroupNorm(4, 8)
        self.drop = nn.Dropout(p=0.2, inplace=True)

    def forward(self, x):
        y = self.gn(self.up(x, output_size=[14, 18]))
        y = self.drop(y)
        return torch.relu(y)


def get_inputs():
    return [torch.rand(2, 4, 7, 9)]


def get_init_inputs():
    return []
