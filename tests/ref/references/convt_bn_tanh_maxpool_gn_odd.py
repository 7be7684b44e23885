"""Own reference: L2-11's chain at a small, odd size: ConvTranspose2d -> BatchNorm2d (training: batch
statistics, running-stat update) -> Tanh -> MaxPool2d(2) -> GroupNorm. The 11x11 BatchNorm output leaves its
last row and column outside every pooling window: they get a gradient through the batch statistics only."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel_size, groups):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(c_in, c_out, kernel_size, stride=1, padding=1)
        self.batch_norm = nn.BatchNorm2d(c_out)
        self.tanh = nn.Tanh()
        self.max_pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.group_norm = nn.GroupNorm(groups, c_out)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.batch_norm(x)
        x = self.tanh(x)
        x = self.max_pool(x)
        return self.group_norm(x)


def get_inputs():
    return [torch.randn(6, 8, 9, 9)]


def get_init_inputs():
    return [8, 16, 5, 4]
