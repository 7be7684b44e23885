"""(C,) parameters read through views that keep their order: `scale.unsqueeze(-1).unsqueeze(-1)` in the prologue,
`gain.view(1, -1, 1, 1)` and `shift[None, :, None, None]` in the epilogue, `w.reshape(1, C, 1, 1)` as a clamp-like
maximum. Each is a per-channel parameter of the region (its gradient reshaped to the (C,) parameter), so the
region takes the whole chain; nothing but the conv runs in PyTorch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels=12):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, channels))
        self.gn = nn.GroupNorm(3, channels)
        self.gain = nn.Parameter(torch.linspace(-1.0, 1.0, channels))
        self.shift = nn.Parameter(torch.linspace(0.2, -0.2, channels))
        self.floor = nn.Parameter(torch.full((channels,), -0.3))

    def forward(self, x):
        x = self.conv(x) * self.scale.unsqueeze(-1).unsqueeze(-1)
        x = self.gn(x) * self.gain.view(1, -1, 1, 1) + self.shift[None, :, None, None]
        return torch.maximum(x, self.floor.reshape(1, x.shape[1], 1, 1))


def get_inputs():
    return [torch.randn(4, 3, 10, 13)]


def get_init_inputs():
    return [12]
