"""Own reference: ConvTranspose2d (stride 2) -> GroupNorm(affine=False) -> Tanh, plus the conv output as a
residual. 10 channels (no multiple of 4: the scalar paths), 35 x 27 positions: with --conv fast the region reads
the conv's channels-last output, its peeled bias both in the prologue and in the residual."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, groups):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride)
        self.norm = nn.GroupNorm(groups, out_channels, affine=False)

    def forward(self, x):
        y = self.conv_transpose(x)
        return torch.tanh(self.norm(y)) + y


def get_inputs():
    return [torch.rand(4, 6, 17, 13)]


def get_init_inputs():
    return [6, 10, 3, 2, 5]
