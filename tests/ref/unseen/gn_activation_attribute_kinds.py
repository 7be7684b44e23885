"""Activations held as attributes of every kind: a module, a functional, a lambda, and one looked up by name with
getattr(F, name)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, act="gelu"):
        super().__init__()
        self.gn1 = nn.GroupNorm(2, 8)
        self.gn2 = nn.GroupNorm(2, 8)
        self.act_module = nn.SiLU()
        self.act_fn = F.mish
        self.act_lambda = lambda t: t * torch.sigmoid(1.5 * t)
        self.act_name = act

    def forward(self, x):
        a = self.act_module(self.gn1(x)) + self.act_fn(self.gn1(x))
        b = self.act_lambda(self.gn2(x)) + getattr(F, self.act_name)(self.gn2(x))
        return a * b


def get_inputs():
    return [torch.randn(3, 8, 10)]


def get_init_inputs():
    return []
