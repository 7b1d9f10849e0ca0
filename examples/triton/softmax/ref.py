# Row softmax (KernelBench level 1, problem 23 "Softmax": torch.softmax over dim 1), small shape.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(8, 48)]


def get_init_inputs():
    return []
