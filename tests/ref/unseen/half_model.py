"""A reference written as people write models, not tuned for: half model."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16).to(torch.bfloat16)
    def forward(self, x):
        return F.silu(self.gn(x))


def get_inputs():
    return [torch.randn(2, 16, 6, 6, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
