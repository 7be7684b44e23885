"""nn.Sequential built from an OrderedDict with named layers, as torchvision writes it."""
from collections import OrderedDict

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, 32, 3, padding=1, bias=False)),
            ("norm0", nn.GroupNorm(8, 32)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(2)),
        ]))

    def forward(self, x):
        return self.features(x)


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return []
