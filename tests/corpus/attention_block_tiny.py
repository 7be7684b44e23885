"""A diffusion UNet / VAE attention block: GroupNorm, a 1x1 projection to queries, keys and values, one-head scaled-dot-product attention over the pixels, an output projection, the residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-6)
        self.to_qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.proj_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        n, c, h, w = x.shape
        q, k, v = self.to_qkv(self.norm(x)).reshape(n, 3, c, h * w).transpose(-1, -2).unbind(1)
        a = F.scaled_dot_product_attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)).squeeze(1)
        return x + self.proj_out(a.transpose(-1, -2).reshape(n, c, h, w))


batch = 2
channels = 64
groups = 8
size = 8


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, groups]
