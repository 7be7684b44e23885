"""The GroupNorm of guided-diffusion-style UNets: GroupNorm32 normalises x.float() and casts the result back with
.type(x.dtype), then SiLU. Under autocast the conv's output is half, the GroupNorm float32, the block's output half
again; in a float32 model every cast keeps the value."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 32, 3, padding=1)
        self.norm = GroupNorm32(8, 32)

    def forward(self, x):
        return F.silu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(3, 16, 10, 12)]


def get_init_inputs():
    return []
