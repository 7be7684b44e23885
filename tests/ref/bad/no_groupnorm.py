import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.bn(x))


def get_inputs():
    return [torch.rand(2, 8, 4, 4)]


def get_init_inputs():
    return [8]
