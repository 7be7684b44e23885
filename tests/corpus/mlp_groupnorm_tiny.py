"""An MLP block on feature vectors: Linear, GroupNorm over the features, SiLU, Linear, the residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features, hidden, groups):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.norm = nn.GroupNorm(groups, hidden)
        self.fc2 = nn.Linear(hidden, features)

    def forward(self, x):
        return x + self.fc2(F.silu(self.norm(self.fc1(x))))


batch = 16
features = 64
hidden = 256
groups = 8


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, hidden, groups]
