"""Conv3d -> GroupNorm with groups == channels (5, InstanceNorm-like) on a rank-5 odd volume -> nn.Mish -> F.mish -> amax over channels."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 5, 3)
        self.gn = nn.GroupNorm(5, 5)
        self.mish = nn.Mish()

    def forward(self, x):
        x = self.gn(self.conv(x))
        x = F.mish(self.mish(x))
        return torch.amax(x, dim=1)


def get_inputs():
    return [torch.rand(2, 3, 6, 7, 9)]


def get_init_inputs():
    return []
