import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.w = nn.Parameter(torch.randn(a, a))

    def forward(self, x):
        return x @ self.w


def get_inputs():
    return [torch.randn(4, 5)]


def get_init_inputs():
    return [5, 0]
