"""A reference written as people write models, not tuned for: gn groups eq channels 3d."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(12, 12)
    def forward(self, x):
        return F.hardswish(self.gn(x)).amax(dim=(2, 3, 4))


def get_inputs():
    return [torch.randn(2, 12, 3, 5, 7)]


def get_init_inputs():
    return []
