"""Linear (N, F) -> unsqueeze(-1) -> GroupNorm on (N, F, 1) -> squeeze(-1) -> F.gelu -> torch.mean over every element."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 16)
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        y = self.gn(self.fc(x).unsqueeze(-1)).squeeze(-1)
        return torch.mean(F.gelu(y))


def get_inputs():
    return [torch.randn(6, 12)]


def get_init_inputs():
    return []
