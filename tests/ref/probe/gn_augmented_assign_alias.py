"""`z = y; y += 1` on the GroupNorm output: z names the same tensor, so z + y is 2 * (gn + 1) in PyTorch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.gn(x)
        z = y
        y += 1
        w = torch.relu(y)
        w *= 2
        return z + y + w * 3


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
