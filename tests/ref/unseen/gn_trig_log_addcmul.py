"""Element-wise math after a GroupNorm that a model may write but no activation module spells: atan, sinh, cosh, tan,
log2, log10, and an addcmul with a per-channel gain."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.gn = nn.GroupNorm(4, channels)
        self.gain = nn.Parameter(torch.rand(channels, 1, 1) + 0.5)

    def forward(self, x):
        y = self.gn(x)
        a = torch.atan(y) + torch.sinh(0.5 * y) - 0.1 * torch.cosh(0.3 * y)
        b = torch.log2(y * y + 1.0) + torch.log10(torch.sigmoid(y) + 0.5) + 0.2 * torch.tan(0.4 * torch.tanh(y))
        return torch.addcmul(a, b, self.gain, value=0.5)


def get_inputs():
    return [torch.randn(2, 12, 9, 7)]


def get_init_inputs():
    return [12]
