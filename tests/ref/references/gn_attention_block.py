"""A diffusion UNet's attention block: GroupNorm, a 1x1 projection to queries, keys and values, multi-head
scaled-dot-product attention over the pixels, an output projection and the residual. The attention stays
PyTorch's own call between kgen's kernels."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups, heads):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        self.qkv = nn.Conv1d(channels, 3 * channels, 1)
        self.proj = nn.Conv1d(channels, channels, 1)
        self.heads = heads

    def forward(self, x):
        n, c, h, w = x.shape
        y = self.norm(x).reshape(n, c, h * w)
        q, k, v = self.qkv(y).reshape(n, 3, self.heads, c // self.heads, h * w).unbind(1)
        a = F.scaled_dot_product_attention(q.transpose(-1, -2), k.transpose(-1, -2), v.transpose(-1, -2))
        a = a.transpose(-1, -2).reshape(n, c, h * w)
        return x + self.proj(a).reshape(n, c, h, w)


batch_size = 4
channels = 128
groups = 32
heads = 4
height, width = 16, 16


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, groups, heads]
