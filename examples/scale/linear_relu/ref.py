# GEMM with K = 8192 (KernelBench level-2 shapes), then ReLU.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(torch.nn.functional.linear(x, self.linear.weight, self.linear.bias))


def get_inputs():
    return [torch.randn(128, 8192)]


def get_init_inputs():
    return [8192, 1024]
