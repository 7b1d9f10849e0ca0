# LayerNorm over the last two dimensions (KernelBench level 1, problem 40 "LayerNorm"), small shape.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(4, 6, 8)]


def get_init_inputs():
    return [(6, 8)]
