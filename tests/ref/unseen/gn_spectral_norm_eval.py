"""A spectral-normalised conv (torch.nn.utils.spectral_norm, GAN discriminators) before a GroupNorm; the model is put
in eval mode in __init__ so its power iteration does not update the buffers in forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.spectral_norm(nn.Conv2d(3, 16, 3, padding=1))
        self.gn = nn.GroupNorm(4, 16)
        self.eval()

    def forward(self, x):
        return F.leaky_relu(self.gn(self.conv(x)), 0.2)


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return []
