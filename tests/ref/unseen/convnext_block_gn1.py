"""A ConvNeXt block with GroupNorm(1, C) as its norm: depthwise 7x7 conv, the norm, permute to (N, H, W, C), two
Linears with GELU, a layer scale, permute back, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.GroupNorm(1, dim)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.pw2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x):
        h = self.norm(self.dwconv(x)).permute(0, 2, 3, 1)
        h = self.gamma * self.pw2(F.gelu(self.pw1(h)))
        return x + h.permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(2, 32, 14, 14)]


def get_init_inputs():
    return []
