"""x + GroupNorm(conv(x)) -> relu: the residual is the conv's input, which the region does not read: an element-wise kernel adds it."""
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__(); self.conv = nn.Conv2d(16, 16, 3, padding=1); self.gn = nn.GroupNorm(4, 16)
    def forward(self, x):
        return torch.relu(x + self.gn(self.conv(x)))
def get_inputs(): return [torch.randn(2, 16, 9, 9)]
def get_init_inputs(): return []
