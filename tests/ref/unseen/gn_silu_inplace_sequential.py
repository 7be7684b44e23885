import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Sequential with in-place activations, the way torchvision-style blocks are built."""

    def __init__(self, cin, cout, groups):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            nn.GroupNorm(groups, cout),
            nn.SiLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.GroupNorm(groups, cout),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.block(x)


def get_inputs():
    return [torch.randn(2, 16, 20, 20)]


def get_init_inputs():
    return [16, 32, 4]
