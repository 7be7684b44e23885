"""A PoolFormer block: GroupNorm with one group (a layer norm over C, H, W), average-pool token mixing minus its input, the residual, GroupNorm, a 1x1-conv MLP with GELU, the residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, hidden):
        super().__init__()
        self.norm1 = nn.GroupNorm(1, channels)
        self.pool = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.norm2 = nn.GroupNorm(1, channels)
        self.fc1 = nn.Conv2d(channels, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, channels, 1)

    def forward(self, x):
        y = self.norm1(x)
        x = x + (self.pool(y) - y)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


batch = 32
channels = 320
hidden = 1280
size = 14


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, hidden]
