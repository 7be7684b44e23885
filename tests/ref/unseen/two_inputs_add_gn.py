"""Skip connection from another tensor: GroupNorm(x + skip) then softplus with beta and threshold."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(5, 20)

    def forward(self, x, skip):
        return F.softplus(self.gn(x + skip), beta=2.0, threshold=10.0)


def get_inputs():
    return [torch.randn(3, 20, 11, 9), torch.randn(3, 20, 11, 9)]


def get_init_inputs():
    return []
