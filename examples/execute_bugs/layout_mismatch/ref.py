# Mean over the last dimension of a [4, 24, 16] tensor (reference for examples/execute_bugs/layout_mismatch/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=2)


def get_inputs():
    return [torch.randn(4, 24, 16)]


def get_init_inputs():
    return []
