import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c, g)
        super().__init__()
