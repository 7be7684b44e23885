"""masked_fill of a boolean mask input after GroupNorm, then an einsum contracting channels with a weight vector."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.w = nn.Parameter(torch.randn(16))

    def forward(self, x, mask):
        y = self.gn(x).masked_fill(mask, 0.0)
        return torch.einsum("bchw,c->bhw", y, self.w)


def get_inputs():
    return [torch.randn(2, 16, 6, 6), torch.rand(2, 1, 6, 6) > 0.5]


def get_init_inputs():
    return []
