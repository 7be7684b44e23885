"""A small diffusion UNet as guided diffusion writes one: sinusoidal timestep embedding, ResBlocks with GroupNorm32 and
scale-shift conditioning, a self-attention block at the low resolution, downsampling by strided conv, upsampling by
nearest interpolation, skip connections concatenated."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


def normalization(channels):
    return GroupNorm32(8, channels)


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32,
                                                           device=timesteps.device) / half)
    args = timesteps[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, channels, emb_channels, out_channels):
        super().__init__()
        self.in_layers = nn.Sequential(normalization(channels), nn.SiLU(), nn.Conv2d(channels, out_channels, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, 2 * out_channels))
        self.out_norm = normalization(out_channels)
        self.out_rest = nn.Sequential(nn.SiLU(), nn.Dropout(p=0.0), nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.skip = nn.Identity() if channels == out_channels else nn.Conv2d(channels, out_channels, 1)

    def forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        while len(emb_out.shape) < len(h.shape):
            emb_out = emb_out[..., None]
        scale, shift = torch.chunk(emb_out, 2, dim=1)
        h = self.out_norm(h) * (1 + scale) + shift
        return self.skip(x) + self.out_rest(h)


class AttentionBlock(nn.Module):
    def __init__(self, channels, heads=2):
        super().__init__()
        self.heads = heads
        self.norm = normalization(channels)
        self.qkv = nn.Conv1d(channels, channels * 3, 1)
        self.proj = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        b, c, *spatial = x.shape
        x = x.reshape(b, c, -1)
        qkv = self.qkv(self.norm(x))
        bs, width, length = qkv.shape
        ch = width // (3 * self.heads)
        q, k, v = qkv.reshape(bs * self.heads, ch * 3, length).split(ch, dim=1)
        scale = 1 / math.sqrt(math.sqrt(ch))
        weight = torch.einsum("bct,bcs->bts", q * scale, k * scale)
        weight = torch.softmax(weight.float(), dim=-1).type(weight.dtype)
        a = torch.einsum("bts,bcs->bct", weight, v)
        h = self.proj(a.reshape(bs, -1, length))
        return (x + h).reshape(b, c, *spatial)


class Model(nn.Module):
    def __init__(self, ch=16, emb=32):
        super().__init__()
        self.ch = ch
        self.time_embed = nn.Sequential(nn.Linear(ch, emb), nn.SiLU(), nn.Linear(emb, emb))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.down_res = ResBlock(ch, emb, ch)
        self.down = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.mid_res = ResBlock(ch, emb, 2 * ch)
        self.mid_attn = AttentionBlock(2 * ch)
        self.up_res = ResBlock(3 * ch, emb, ch)
        self.out = nn.Sequential(normalization(ch), nn.SiLU(), nn.Conv2d(ch, 3, 3, padding=1))

    def forward(self, x, timesteps):
        emb = self.time_embed(timestep_embedding(timesteps, self.ch))
        h0 = self.down_res(self.inp(x), emb)
        h = self.mid_attn(self.mid_res(self.down(h0), emb))
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = self.up_res(torch.cat([h, h0], dim=1), emb)
        return self.out(h)


def get_inputs():
    return [torch.randn(2, 3, 16, 16), torch.tensor([10.0, 500.0])]


def get_init_inputs():
    return []
