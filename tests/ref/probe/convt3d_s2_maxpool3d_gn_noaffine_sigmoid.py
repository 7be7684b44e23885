"""ConvTranspose3d (stride 2, no bias) -> MaxPool3d in PyTorch -> GroupNorm without affine -> sigmoid * 3."""
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__(); self.conv = nn.ConvTranspose3d(4, 8, 3, stride=2, padding=1, bias=False); self.pool = nn.MaxPool3d(2); self.gn = nn.GroupNorm(2, 8, affine=False)
    def forward(self, x): return torch.sigmoid(self.gn(self.pool(self.conv(x)))) * 3
def get_inputs(): return [torch.randn(2, 4, 5, 6, 7)]
def get_init_inputs(): return []
