# EXPECT: BUG
# (the last of 4096 input features is left out of the product)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n)

    def forward(self, x):
        k = x.shape[1] - 1
        return torch.relu(x[:, :k] @ self.linear.weight[:, :k].t() + self.linear.bias)
