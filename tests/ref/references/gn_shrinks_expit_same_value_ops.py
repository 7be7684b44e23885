"""GroupNorm on (N, C, L) -> softshrink, nn.Hardshrink, torch.special.expit(y) * y, with ops that return their
operand's value between them (nn.Identity, nn.Dropout(0.0), .contiguous(), .float(), .to(torch.float32),
.clone()): none of them splits the region, which takes the whole chain in its epilogue."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(3, 12)
        self.keep = nn.Identity()
        self.drop = nn.Dropout(0.0)
        self.shrink = nn.Hardshrink(0.2)

    def forward(self, x):
        y = self.keep(self.gn(x.contiguous()))
        y = F.softshrink(self.drop(y), 0.3).float()
        y = self.shrink(y.to(torch.float32)).clone()
        return torch.special.expit(y) * y + F.dropout(y, p=0.4, training=False)


def get_inputs():
    return [torch.randn(6, 12, 37)]


def get_init_inputs():
    return []
