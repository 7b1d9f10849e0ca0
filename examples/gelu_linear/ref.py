# A small pure-PyTorch pair for CPU checking: linear layer followed by exact GELU and a scale.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x)) * 2.0


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 16]
