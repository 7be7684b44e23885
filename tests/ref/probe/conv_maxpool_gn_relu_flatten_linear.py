"""Conv2d -> MaxPool2d -> GroupNorm -> relu -> flatten -> Linear (the GN between two library ops, no reduction)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.pool = nn.MaxPool2d(2)
        self.gn = nn.GroupNorm(4, 8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.gn(self.pool(self.conv(x))))
        return self.fc(x.flatten(1))


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
