"""group_norm imported by name, torch.nn.functional under another alias, dropout with p = 0 and an in-place
sigmoid_ on an intermediate."""
import torch
import torch.nn as nn
import torch.nn.functional as fn
from torch.nn.functional import group_norm


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.ones(16))
        self.bias = nn.Parameter(torch.zeros(16))

    def forward(self, x):
        y = group_norm(x, 4, self.weight, self.bias)
        z = torch.relu(fn.dropout(y, 0.0))
        return z * y.clone().sigmoid_()


def get_inputs():
    return [torch.randn(2, 16, 7, 7)]


def get_init_inputs():
    return []
