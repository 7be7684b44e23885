"""A reference written as people write models, not tuned for: torch group norm."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(16))
    def forward(self, x):
        return torch.group_norm(x, 2, self.weight, None, 1e-6).relu()


def get_inputs():
    return [torch.randn(3, 16, 9)]


def get_init_inputs():
    return []
