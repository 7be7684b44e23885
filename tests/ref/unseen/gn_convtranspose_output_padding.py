"""A stride-2 ConvTranspose2d with output_padding (odd output planes), GroupNorm, GELU (tanh)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 3, stride=2, padding=1, output_padding=1)
        self.norm = nn.GroupNorm(4, cout)

    def forward(self, x):
        return F.gelu(self.norm(self.up(x)), approximate="tanh")


def get_inputs():
    return [torch.randn(2, 8, 7, 5)]


def get_init_inputs():
    return [8, 12]
