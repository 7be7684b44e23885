import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv -> GroupNorm -> in training a per-channel noise-free scale and SiLU, in eval a mean over the plane."""

    def __init__(self, cin, cout, groups):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.gn = nn.GroupNorm(groups, cout)
        self.scale = nn.Parameter(torch.randn(cout, 1, 1) * 0.1 + 1.0)

    def forward(self, x):
        h = self.gn(self.conv(x))
        if self.training:
            h = F.silu(h * self.scale) + torch.tensor(0.25)
        else:
            h = torch.tanh(h) * 0.5
        return h


def get_inputs():
    return [torch.randn(4, 8, 16, 16)]


def get_init_inputs():
    return [8, 32, 4]
