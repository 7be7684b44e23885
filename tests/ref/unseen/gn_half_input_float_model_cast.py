"""float16 inputs to a float32 model that casts them first (x.float()), GroupNorm, then back to half (.half())."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        return torch.relu(self.gn(x.float())).half()


def get_inputs():
    return [torch.randn(2, 8, 10).half()]


def get_init_inputs():
    return []
