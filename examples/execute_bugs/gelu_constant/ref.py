# Linear layer followed by GELU (tanh approximation) on an [8, 32] input (reference for
# examples/execute_bugs/gelu_constant/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x), approximate="tanh")


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 64]
