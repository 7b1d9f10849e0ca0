# EXPECT: EQUAL
# the Python scalar 0.2 as the f32 value a CUDA kernel uses (13421773/2^26), and 0.5 + 0.2 folded
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.lin = nn.Linear(a, b)

    def forward(self, x):
        return torch.tanh(self.lin(x) - 0.5) - 0.20000000298023224
