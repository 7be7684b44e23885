"""Conv1d -> GroupNorm on (N, C, L), C=6 (not a multiple of 4), 3 groups -> functional leaky_relu 0.2 -> mean over L."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout, k, groups):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k)
        self.gn = nn.GroupNorm(groups, cout)

    def forward(self, x):
        x = self.conv(x)
        x = self.gn(x)
        x = torch.nn.functional.leaky_relu(x, 0.2)
        return x.mean(dim=2)


def get_inputs():
    return [torch.rand(2, 3, 39)]


def get_init_inputs():
    return [3, 6, 3, 3]
