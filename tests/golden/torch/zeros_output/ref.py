import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        pass

    def forward(self, x):
        return torch.softmax(x, dim=-1).sum(dim=-1) * x.abs().max()


def get_inputs():
    return [torch.randn(5, 3)]


def get_init_inputs():
    return [0, 0]
