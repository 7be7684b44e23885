"""A helper function of the reference's own file that forward calls whole (torch.fx.wrap keeps fx out of it): the
emitted file carries it and calls it by name, as PyTorch's own code between kgen's kernels; its node, named after
it, is renamed so that forward's variable does not shadow it. Python's operators on sizes (a negation) are written
as such."""
import torch
import torch.fx
import torch.nn as nn


def centre_channels(t):
    return t - t.mean(dim=1, keepdim=True)


torch.fx.wrap("centre_channels")


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        y = centre_channels(torch.relu(self.gn(x)))
        return y.flatten(-(x.dim() - 2))


batch_size = 4
channels = 32
groups = 4
height, width = 16, 12


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, groups]
