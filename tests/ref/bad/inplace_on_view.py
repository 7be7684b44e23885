import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        x = self.gn(x)
        x[:, :4].relu_()
        return x


def get_inputs():
    return [torch.rand(2, 8, 4, 4)]


def get_init_inputs():
    return []
