import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Activations with arguments after GroupNorms: softplus(beta, threshold), elu(alpha), celu, selu."""

    def __init__(self, channels, groups):
        super().__init__()
        self.a = nn.GroupNorm(groups, channels)
        self.b = nn.GroupNorm(groups, channels)

    def forward(self, x):
        h = F.softplus(self.a(x), beta=2.0, threshold=10.0)
        h = F.elu(h, alpha=0.5) + F.celu(h, alpha=1.5)
        return F.selu(self.b(h))


def get_inputs():
    return [torch.randn(4, 16, 12, 12)]


def get_init_inputs():
    return [16, 4]
