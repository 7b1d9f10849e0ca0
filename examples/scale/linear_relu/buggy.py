# EXPECT: BUG (the last input feature is dropped from the product)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        k = x.shape[1] - 1
        return torch.relu(x[:, :k] @ self.linear.weight[:, :k].t() + self.linear.bias)
