# Row sums of a [16, 128] matrix (reference for examples/execute_bugs/shared_race/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(16, 128)]


def get_init_inputs():
    return []
