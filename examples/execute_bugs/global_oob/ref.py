# Swish (x * sigmoid(x)) on a [10, 100] matrix (reference for examples/execute_bugs/global_oob/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(10, 100)]


def get_init_inputs():
    return []
