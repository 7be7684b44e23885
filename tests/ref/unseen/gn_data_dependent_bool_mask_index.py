"""A reference written as people write models: the sum of the values a boolean mask selects (`y[y > 0.5]`, a
shape only the data gives) after GroupNorm and ReLU, kept as the reference's own PyTorch call."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        y = torch.relu(self.gn(x))
        return y[y > 0.5].sum()


def get_inputs():
    return [torch.randn(2, 8, 4)]


def get_init_inputs():
    return []
