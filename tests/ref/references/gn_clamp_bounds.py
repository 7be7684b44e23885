"""kgen's own reference: clamp right on the GroupNorm's input and after it, with bounds that torch.rand inputs
and the GPU test's crafted inputs hit exactly (0.25, 0.75): the gradient ON a bound follows the PyTorch that
runs it (tests/gpu/test_ref_emitted.py::test_clamp_gradient_on_the_bounds)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        x = torch.clamp(x, 0.25, 0.75)
        x = self.gn(x)
        return torch.clamp(x, min=-1.0)


def get_inputs():
    return [torch.rand(4, 16, 12, 10)]


def get_init_inputs():
    return [16, 4]
