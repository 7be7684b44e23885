"""Own reference: a ConvTranspose3d whose output a region reads with no reduction after it (x * sigmoid(x), a
GroupNorm with its affine, HardSwish), at an odd spatial size: `--conv fast` runs it channels_last_3d (NDHWC)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel_size, stride, groups):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(c_in, c_out, kernel_size, stride=stride)
        self.group_norm = nn.GroupNorm(groups, c_out)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x * torch.sigmoid(x)
        return F.hardswish(self.group_norm(x))


def get_inputs():
    return [torch.rand(4, 3, 7, 9, 11)]


def get_init_inputs():
    return [3, 12, 3, 2, 4]
