"""The GroupNorm output reshaped to (N, G, -1) and its per-group variance taken with torch.var (a diagnostic output),
beside the output itself."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 12)

    def forward(self, x):
        y = self.gn(x)
        return y, torch.var(y.reshape(y.shape[0], 4, -1), dim=-1, unbiased=False)


def get_inputs():
    return [torch.randn(3, 12, 5, 5)]


def get_init_inputs():
    return []
