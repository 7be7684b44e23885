"""nn.Dropout(0.1) before and after the GroupNorm (train mode: the random stream must match PyTorch)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1 = nn.Dropout(0.1)
        self.gn = nn.GroupNorm(4, 8)
        self.d2 = nn.Dropout(0.1)

    def forward(self, x):
        return self.d2(torch.relu(self.gn(self.d1(x))))


def get_inputs():
    return [torch.randn(2, 8, 6, 6)]


def get_init_inputs():
    return []
