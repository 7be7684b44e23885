"""ConvTranspose3d (stride 2) -> GroupNorm -> nn.GELU() -> nn.Hardswish() -> mean over (D, H, W)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.convt = nn.ConvTranspose3d(3, 6, 3, stride=2, padding=1)
        self.gn = nn.GroupNorm(2, 6)
        self.gelu = nn.GELU()
        self.hs = nn.Hardswish()

    def forward(self, x):
        x = self.hs(self.gelu(self.gn(self.convt(x))))
        return x.mean(dim=[2, 3, 4])


def get_inputs():
    return [torch.rand(2, 3, 4, 5, 6)]


def get_init_inputs():
    return []
