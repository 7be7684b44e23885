"""Own reference: F.dropout(..., training=self.training) (the flag must follow .eval()), torch.group_norm (the
torch-namespace spelling), and five per-channel parameters after it (a region's functor reads at most four)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.w = nn.Parameter(torch.rand(channels) + 0.5)
        self.b = nn.Parameter(torch.randn(channels))
        self.p = nn.ParameterList([nn.Parameter(torch.randn(channels, 1, 1)) for _ in range(5)])

    def forward(self, x):
        y = torch.group_norm(x, 2, self.w, self.b, 1e-5)
        y = (y * self.p[0] + self.p[1]) * self.p[2] + self.p[3]
        y = y * self.p[4]
        y = F.dropout(y, 0.3, training=self.training)
        return F.gelu(y)


def get_inputs():
    return [torch.randn(2, 6, 5, 5)]


def get_init_inputs():
    return [6]
