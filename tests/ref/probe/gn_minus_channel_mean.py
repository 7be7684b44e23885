"""GroupNorm output minus its mean over channels (keepdim): the mean runs in PyTorch, the subtraction reads it broadcast."""
import torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__(); self.gn = nn.GroupNorm(4, 16)
    def forward(self, x):
        y = self.gn(x)
        return y - y.mean(dim=1, keepdim=True)
def get_inputs(): return [torch.randn(2, 16, 5, 7)]
def get_init_inputs(): return []
