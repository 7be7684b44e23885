import torch
import torch.nn as nn


class Model(nn.Module):
    """PyTorch's aliases (multiply, subtract, divide, negative, absolute, rsub), masked_fill with a comparison and a
    reduction spelled with NumPy's keywords: one region."""

    def __init__(self, channels, groups):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        y = self.gn(self.conv(x))
        y = torch.subtract(torch.multiply(y, 2.0), 0.5).divide(3.0)
        y = y.masked_fill(y < -0.2, -0.2)
        y = torch.rsub(torch.negative(y), 1.0).absolute()
        return torch.sum(y, axis=(2, 3), keepdims=True)


def get_inputs():
    return [torch.rand(4, 3, 15, 13)]


def get_init_inputs():
    return [12, 3]
