"""An overlapping average pooling (kernel 3, stride 2, padding 1) after GroupNorm and ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        return F.avg_pool2d(F.relu(self.gn(x)), 3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(2, 16, 15, 15)]


def get_init_inputs():
    return []
