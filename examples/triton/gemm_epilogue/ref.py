# GEMM + bias + ReLU (KernelBench level 2, problem 76 "Gemm_Add_ReLU": Linear without bias, a bias
# parameter added, then ReLU), small shape.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.relu(self.gemm(x) + self.bias)


def get_inputs():
    return [torch.randn(40, 24)]


def get_init_inputs():
    return [24, 20, (20,)]
