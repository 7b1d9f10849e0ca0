# EXPECT: EQUAL
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.lin = nn.Linear(a, b)

    def forward(self, x):
        y = self.lin(x)
        return y * (1.0 + torch.erf(y * 0.7071067811865476))
