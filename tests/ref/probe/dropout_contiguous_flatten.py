"""GroupNorm -> nn.Dropout(p=0.0) -> F.relu(inplace=True) -> x.contiguous() -> torch.flatten(x, 1) -> torch.sigmoid."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 6)
        self.drop = nn.Dropout(p=0.0)

    def forward(self, x):
        x = self.drop(self.gn(x))
        x = F.relu(x, inplace=True)
        x = x.contiguous()
        x = torch.flatten(x, 1)
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(4, 6, 5, 7)]


def get_init_inputs():
    return []
