"""Own reference: Linear -> GroupNorm -> max over channels (N, 1), then sigmoid(m * scale + shift) with
(1, K, 1, 1) parameters broadcasting it to (1, K, N, 1) (as L2-75's bias add), then a transpose (a
non-contiguous view) scaled: two kgen element-wise kernels, one reading its input through broadcast
strides, one through the transpose's (its gain is a (1, 1, K, 1) parameter: an op of numbers alone would move
before the transpose, into the first kernel)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, groups, k):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.gn = nn.GroupNorm(groups, out_features)
        self.scale = nn.Parameter(torch.randn(1, k, 1, 1))
        self.shift = nn.Parameter(torch.randn(1, k, 1, 1))
        self.gain = nn.Parameter(torch.randn(1, 1, k, 1))

    def forward(self, x):
        y = self.gn(self.fc(x))
        m = torch.max(y, dim=1, keepdim=True)[0]
        out = torch.sigmoid(m * self.scale + self.shift)
        return out.transpose(1, 2) * self.gain


def get_inputs():
    return [torch.rand(40, 64)]


def get_init_inputs():
    return [64, 256, 8, 24]
