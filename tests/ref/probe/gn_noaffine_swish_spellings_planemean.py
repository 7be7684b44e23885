"""Conv2d -> nn.GroupNorm(affine=False) -> x*torch.sigmoid(x) -> F.silu -> nn.SiLU -> mean(dim=[2, 3])."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.gn = nn.GroupNorm(2, 8, affine=False)
        self.act = nn.SiLU()

    def forward(self, x):
        x = self.gn(self.conv(x))
        x = x * torch.sigmoid(x)
        x = F.silu(x)
        x = self.act(x)
        return x.mean(dim=[2, 3])


def get_inputs():
    return [torch.rand(4, 3, 16, 16)]


def get_init_inputs():
    return []
