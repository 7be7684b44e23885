"""A diffusion-UNet residual block: GroupNorm -> SiLU -> conv, plus a time embedding (Linear of SiLU(temb), a second input) broadcast per (sample, channel), GroupNorm -> SiLU -> Dropout(0.0) -> conv, plus the block's input."""
import torch, torch.nn as nn, torch.nn.functional as F
class Model(nn.Module):
    def __init__(self, c=32, t=16):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, c); self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.emb = nn.Linear(t, c)
        self.norm2 = nn.GroupNorm(8, c); self.drop = nn.Dropout(0.0); self.conv2 = nn.Conv2d(c, c, 3, padding=1)
    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.emb(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return x + h
def get_inputs(): return [torch.randn(2, 32, 16, 16), torch.randn(2, 16)]
def get_init_inputs(): return [32, 16]
