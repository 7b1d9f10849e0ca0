# Sum over dimension 1, keepdim (KernelBench level 1, problem 47 "Sum_reduction_over_a_dimension"), small shape.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(4, 12, 10)]


def get_init_inputs():
    return [1]
