"""GroupNorm -> relu -> m = x.mean((2, 3), keepdim=True) -> x * m (squeeze-excite style product)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = torch.relu(self.gn(self.conv(x)))
        return y * torch.sigmoid(y.mean((2, 3), keepdim=True))


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
