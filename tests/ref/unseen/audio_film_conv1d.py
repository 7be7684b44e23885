"""An audio encoder layer conditioned on a speaker embedding: Conv1d, GroupNorm, FiLM per (sample, channel) as
(N, C, 1), then GELU (tanh)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, cin=16, channels=64, speakers=24):
        super().__init__()
        self.conv = nn.Conv1d(cin, channels, 5, padding=2)
        self.norm = nn.GroupNorm(16, channels)
        self.film = nn.Linear(speakers, 2 * channels)

    def forward(self, x, spk):
        gamma, beta = self.film(spk).unsqueeze(-1).chunk(2, dim=1)
        h = self.norm(self.conv(x))
        return F.gelu(gamma * h + beta, approximate="tanh")


def get_inputs():
    return [torch.randn(3, 16, 200), torch.randn(3, 24)]


def get_init_inputs():
    return []
