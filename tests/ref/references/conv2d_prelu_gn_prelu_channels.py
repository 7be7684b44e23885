"""Conv2d -> F.prelu with a one-value weight -> GroupNorm -> nn.PReLU(C) with a weight per channel: PReLU's
(C,) weight applies to dim 1 (not the last dim, as broadcasting would read it), so it is a per-channel parameter
of the region, with its gradient; the one-value weight's gradient is the sum over every element. Odd planes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.alpha = nn.Parameter(torch.tensor([0.3]))
        self.gn = nn.GroupNorm(groups, out_channels)
        self.act = nn.PReLU(out_channels)
        with torch.no_grad():
            self.act.weight.copy_(torch.linspace(-0.5, 0.5, out_channels))

    def forward(self, x):
        x = F.prelu(self.conv(x), self.alpha)
        return self.act(self.gn(x))


def get_inputs():
    return [torch.randn(3, 5, 13, 11)]


def get_init_inputs():
    return [5, 12, 4]
