"""F.group_norm(x, 2, weight=self.w) with no bias, after a conv without bias -> relu."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, bias=False)
        self.w = nn.Parameter(torch.randn(8))

    def forward(self, x):
        return F.relu(F.group_norm(self.conv(x), 2, weight=self.w))


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
