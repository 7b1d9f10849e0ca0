# EXPECT: EQUAL
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n)

    def forward(self, x):
        return torch.clamp_min(x @ self.linear.weight.t() + self.linear.bias, 0.0)
