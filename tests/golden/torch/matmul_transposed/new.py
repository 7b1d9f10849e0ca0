# EXPECT: BUG
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.w = nn.Parameter(torch.randn(a, a))

    def forward(self, x):
        return x @ self.w.t()
