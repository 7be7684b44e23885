import torch
import torch.nn as nn


class Model(nn.Module):
    """A GroupNorm in float64 (PyTorch's) beside a float32 one (kgen's region)."""

    def __init__(self):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)
        self.gn64 = nn.GroupNorm(2, 8).double()

    def forward(self, x):
        y = torch.relu(self.gn(self.conv(x)))
        z = self.gn64(y.double()).float()
        return torch.sigmoid(z) * y


def get_inputs():
    return [torch.rand(4, 3, 10, 10)]


def get_init_inputs():
    return []
