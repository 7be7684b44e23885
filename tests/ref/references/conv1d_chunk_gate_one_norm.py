"""Own reference: a gated 1-D conv unit, `torch.chunk` over dim -2: only one half is normalised, the other gates it
as it is, so the conv keeps its bias (the half read outside a region needs it) and the region takes none."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, 3, padding=1)
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        a, b = torch.chunk(self.conv(x), 2, dim=-2)
        return torch.tanh(self.gn(a)) * b


def get_inputs():
    return [torch.randn(4, 32, 50)]


def get_init_inputs():
    return [32, 8]
