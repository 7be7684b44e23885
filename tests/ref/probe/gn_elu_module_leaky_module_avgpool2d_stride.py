"""nn.ELU(alpha=1.2) -> GroupNorm -> nn.LeakyReLU(0.05) -> nn.AvgPool2d(3, stride=2)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.elu = nn.ELU(alpha=1.2)
        self.gn = nn.GroupNorm(4, 8)
        self.leaky = nn.LeakyReLU(0.05)
        self.pool = nn.AvgPool2d(3, stride=2)

    def forward(self, x):
        return self.pool(self.leaky(self.gn(self.elu(self.conv(x)))))


def get_inputs():
    return [torch.randn(2, 3, 15, 15)]


def get_init_inputs():
    return []
