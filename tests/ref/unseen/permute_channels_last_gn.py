"""An image in NHWC (N, H, W, C) permuted to NCHW for a GroupNorm and LeakyReLU, permuted back."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(8, 32)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x):
        return self.act(self.gn(x.permute(0, 3, 1, 2))).permute(0, 2, 3, 1)


def get_inputs():
    return [torch.randn(2, 16, 16, 32)]


def get_init_inputs():
    return []
