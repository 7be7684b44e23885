"""A per-channel gate read from a column of a parameter matrix (`self.mix[:, 0][None, :, None, None]`, a strided
view, not contiguous) after a GroupNorm, then a gain from a condition vector averaged over the batch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels=20, cdim=5):
        super().__init__()
        self.norm = nn.GroupNorm(5, channels)
        self.mix = nn.Parameter(torch.randn(channels, 3) * 0.5 + 1.0)
        self.cond = nn.Linear(cdim, channels)

    def forward(self, x, c):
        gate = self.mix[:, 0][None, :, None, None]
        gain = self.cond(c).mean(0)[None, :, None, None]
        return torch.tanh(self.norm(x) * gate) * gain


def get_inputs():
    return [torch.randn(3, 20, 7, 6), torch.randn(3, 5)]


def get_init_inputs():
    return []
