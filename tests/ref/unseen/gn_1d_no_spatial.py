"""A reference written as people write models, not tuned for: gn 1d no spatial."""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 64)
        self.gn = nn.GroupNorm(16, 64)
    def forward(self, x):
        return F.relu(self.gn(self.fc(x))).sum(dim=1)


def get_inputs():
    return [torch.randn(128, 20)]


def get_init_inputs():
    return []
