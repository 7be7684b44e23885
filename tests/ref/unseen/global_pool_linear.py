"""A classifier head: conv, GroupNorm, SiLU, global average pool, flatten, Linear."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout, classes):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1)
        self.gn = nn.GroupNorm(8, cout)
        self.act = nn.SiLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cout, classes)

    def forward(self, x):
        x = self.pool(self.act(self.gn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


def get_inputs():
    return [torch.randn(4, 8, 32, 32)]


def get_init_inputs():
    return [8, 32, 10]
