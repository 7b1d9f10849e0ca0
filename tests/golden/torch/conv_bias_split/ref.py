import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 3, 6, 6)]


def get_init_inputs():
    return [0, 0]
