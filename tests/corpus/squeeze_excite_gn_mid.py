"""A squeeze-and-excitation block after a GroupNorm: GroupNorm, ReLU, global average pool, a 1x1 squeeze and excite with ReLU and a sigmoid gate, the gated features."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, reduced, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        self.squeeze = nn.Conv2d(channels, reduced, 1)
        self.excite = nn.Conv2d(reduced, channels, 1)

    def forward(self, x):
        h = F.relu(self.norm(x))
        gate = torch.sigmoid(self.excite(F.relu(self.squeeze(h.mean(dim=(2, 3), keepdim=True)))))
        return h * gate


batch = 16
channels = 256
reduced = 16
groups = 32
size = 28


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, reduced, groups]
