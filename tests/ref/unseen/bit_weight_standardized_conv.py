"""BiT's ResNet unit: a weight-standardised conv (the weight's mean and std over its fan-in taken in forward), then
GroupNorm(32) and ReLU, pre-activation style with a residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class StdConv2d(nn.Conv2d):
    def forward(self, x):
        w = self.weight
        v, m = torch.var_mean(w, dim=[1, 2, 3], keepdim=True, unbiased=False)
        w = (w - m) / torch.sqrt(v + 1e-10)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Model(nn.Module):
    def __init__(self, c=64):
        super().__init__()
        self.gn1 = nn.GroupNorm(32, c)
        self.conv1 = StdConv2d(c, c, 3, padding=1, bias=False)
        self.gn2 = nn.GroupNorm(32, c)
        self.conv2 = StdConv2d(c, c, 3, padding=1, bias=False)

    def forward(self, x):
        out = F.relu(self.gn1(x))
        out = self.conv1(out)
        out = self.conv2(F.relu(self.gn2(out)))
        return out + x


def get_inputs():
    return [torch.randn(2, 64, 14, 14)]


def get_init_inputs():
    return []
