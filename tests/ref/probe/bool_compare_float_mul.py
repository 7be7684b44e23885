"""(y > 0).float() * y and (y <= 0.5).to(y.dtype): comparisons producing bool used as float after the GroupNorm."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.gn(x)
        return (y > 0).float() * y + (y <= 0.5).to(y.dtype)


def get_inputs():
    return [torch.randn(2, 8, 5, 5)]


def get_init_inputs():
    return []
