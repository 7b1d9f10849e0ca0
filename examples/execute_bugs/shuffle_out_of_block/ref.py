# Euclidean norm of each row of a [16, 48] matrix (reference for examples/execute_bugs/shuffle_out_of_block/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sqrt(torch.sum(x * x, dim=1))


def get_inputs():
    return [torch.randn(16, 48)]


def get_init_inputs():
    return []
