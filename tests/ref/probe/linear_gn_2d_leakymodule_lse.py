"""Linear -> GroupNorm on (N, F) -> nn.LeakyReLU(0.1) -> F.leaky_relu(inplace=True) -> logsumexp over features (dim=1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, fin, fout, groups):
        super().__init__()
        self.fc = nn.Linear(fin, fout)
        self.gn = nn.GroupNorm(groups, fout)
        self.act = nn.LeakyReLU(0.1)

    def forward(self, x):
        x = self.act(self.gn(self.fc(x)))
        x = F.leaky_relu(x, negative_slope=0.3, inplace=True)
        return torch.logsumexp(x, dim=1)


def get_inputs():
    return [torch.rand(5, 20)]


def get_init_inputs():
    return [20, 30, 6]
