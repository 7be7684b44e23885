"""Own reference: a tensor made in forward (torch.tensor(0.1): fx keeps it as a constant of the graph), the
clamp family in its spellings, tensors passed by keyword (self.gn(input=...), torch.sigmoid(input=...),
torch.clamp(input=..., min=...)), and an average pooling whose window does not divide the plane (7 x 13)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)
        self.p = nn.Parameter(torch.rand(channels, 1, 1) + 0.5)
        self.pool = nn.AvgPool2d(3)

    def forward(self, x):
        x = self.gn(input=x)
        x = torch.clamp(input=x, min=-0.5)
        x = x.clamp(max=2.0)
        x = torch.clamp_min(x, -0.25)
        x = torch.max(x, torch.tensor(0.1))
        x = torch.minimum(x, self.p)
        x = torch.sigmoid(input=x) + x
        return self.pool(x)


def get_inputs():
    return [torch.randn(3, 6, 7, 13)]


def get_init_inputs():
    return [6, 2]
