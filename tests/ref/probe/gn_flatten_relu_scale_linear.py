"""GroupNorm -> flatten(1) -> F.relu -> * 0.5 -> nn.Linear: the element-wise ops after the flatten join the region."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2)
        self.gn = nn.GroupNorm(4, 8)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = self.gn(self.conv(x)).flatten(1)
        return self.fc(F.relu(y) * 0.5)


def get_inputs():
    return [torch.randn(3, 3, 10, 10)]


def get_init_inputs():
    return []
