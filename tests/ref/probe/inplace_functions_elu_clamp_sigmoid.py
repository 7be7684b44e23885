import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """In-place functions (torch.*_ / F.*_): each writes its operand, so later reads of it see the result."""

    def __init__(self):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        y = self.gn(self.conv(x))
        F.elu_(y, 0.5)
        torch.clamp_(y, min=-0.25, max=2.0)
        z = F.leaky_relu_(y * 3.0, 0.1)
        torch.sigmoid_(z)
        return y + z


def get_inputs():
    return [torch.rand(4, 3, 17, 19)]


def get_init_inputs():
    return []
