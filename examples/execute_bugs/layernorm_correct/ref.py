# LayerNorm over the last dimension (64) of a [16, 64] input, with affine parameters
# (reference for examples/execute_bugs/layernorm_correct/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [64]
