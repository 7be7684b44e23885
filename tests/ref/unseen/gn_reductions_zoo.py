"""Several reductions of one GroupNorm output as separate outputs: spatial amax, channel logsumexp with keepdim,
adaptive max pooling to 1, a mean over the last dim, and a sum over the batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(3, 12)

    def forward(self, x):
        y = F.gelu(self.gn(x))
        return (y.amax((2, 3)), torch.logsumexp(y, 1, keepdim=True), F.adaptive_max_pool2d(y, 1), y.mean(-1),
                y.sum(0))


def get_inputs():
    return [torch.randn(3, 12, 7, 9)]


def get_init_inputs():
    return []
