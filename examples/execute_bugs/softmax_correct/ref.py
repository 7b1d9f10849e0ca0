# Softmax over the rows of a [16, 64] matrix, scaled first (reference for examples/execute_bugs/softmax_correct/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.softmax(x * self.scale, dim=1)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [0.5]
