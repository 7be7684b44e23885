"""An optional conditioning argument that defaults to None (`if cond is not None:`), and keyword-only eps."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.proj = nn.Linear(8, 16)

    def forward(self, x, cond=None, *, eps: float = 1e-5):
        h = self.gn(x)
        if cond is not None:
            h = h + self.proj(cond)[:, :, None]
        return F.softplus(h)


def get_inputs():
    return [torch.randn(3, 16, 50)]


def get_init_inputs():
    return []
