"""GroupNorm -> `values, indices = torch.max(y, dim=1)` with the indices never read: the unused item does not keep
the max over channels from fusing into the region; then `values - values.std()`: the standard deviation over
every element stays PyTorch's (a library reduction), and so does the subtraction reading it broadcast (a lone
element-wise op; test_plan_spellings adds a second op to make it a kgen element-wise kernel)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 16, 1)
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x):
        values, indices = torch.max(torch.tanh(self.gn(self.conv(x))), dim=1)
        return values - values.std()


def get_inputs():
    return [torch.randn(3, 4, 10, 9)]


def get_init_inputs():
    return []
