# Row sums of ReLU of a [16, 40] matrix (reference for examples/execute_bugs/uninit_shared/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(torch.relu(x), dim=1)


def get_inputs():
    return [torch.randn(16, 40)]


def get_init_inputs():
    return []
