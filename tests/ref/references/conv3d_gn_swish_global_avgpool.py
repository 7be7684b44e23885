"""Conv3d -> GroupNorm -> x * sigmoid(x) -> F.adaptive_avg_pool3d(x, 1) -> flatten: global average pooling is the
mean over the spatial dims (keepdim), fused into the region; the flatten stays a view."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 12, 3)
        self.gn = nn.GroupNorm(3, 12)

    def forward(self, x):
        x = self.gn(self.conv(x))
        x = x * torch.sigmoid(x)
        return F.adaptive_avg_pool3d(x, 1).flatten(1)


def get_inputs():
    return [torch.randn(2, 3, 7, 9, 10)]


def get_init_inputs():
    return []
