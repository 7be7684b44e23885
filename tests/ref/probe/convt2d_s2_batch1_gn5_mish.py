"""ConvTranspose2d (stride 2, kernel 4) -> GroupNorm(5, 10) -> F.mish, batch 1, odd planes 14 x 18."""
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__(); self.conv = nn.ConvTranspose2d(3, 10, 4, stride=2, padding=1); self.gn = nn.GroupNorm(5, 10)
    def forward(self, x):
        return torch.nn.functional.mish(self.gn(self.conv(x)))
def get_inputs(): return [torch.randn(1, 3, 7, 9)]
def get_init_inputs(): return []
