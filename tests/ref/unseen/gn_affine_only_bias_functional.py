"""A reference written as people write models, not tuned for: gn affine only bias functional."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.zeros(12))
    def forward(self, x):
        return F.group_norm(x, 3, None, self.b, eps=1e-3).abs()


def get_inputs():
    return [torch.randn(4, 12, 30)]


def get_init_inputs():
    return []
