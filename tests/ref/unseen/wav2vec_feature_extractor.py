"""wav2vec 2.0's feature encoder, first layers: Conv1d(1, C, 10, stride 5, no bias), GroupNorm(C, C) (one channel a
group), GELU, then Conv1d(C, C, 3, stride 2, no bias), GELU; the waveform given as (N, L) and unsqueezed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.conv0 = nn.Conv1d(1, dim, 10, stride=5, bias=False)
        self.norm0 = nn.GroupNorm(dim, dim, affine=True)
        self.conv1 = nn.Conv1d(dim, dim, 3, stride=2, bias=False)

    def forward(self, input_values):
        hidden = input_values[:, None]
        hidden = F.gelu(self.norm0(self.conv0(hidden)))
        hidden = F.gelu(self.conv1(hidden))
        return hidden.transpose(1, 2)


def get_inputs():
    return [torch.randn(2, 4000)]


def get_init_inputs():
    return []
