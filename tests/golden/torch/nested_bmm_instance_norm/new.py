# EXPECT: EQUAL
# (the normalization over each row spelled out: mean and biased variance of the row)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n)
        self.norm = nn.InstanceNorm2d(1)

    def forward(self, x, y):
        h = self.linear(x)
        mean = h.mean(dim=1, keepdim=True)
        var = ((h - mean) ** 2).mean(dim=1, keepdim=True)
        h = (h - mean) / torch.sqrt(var + 1e-5)
        return (h + y) * y
