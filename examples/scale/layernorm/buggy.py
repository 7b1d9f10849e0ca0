# EXPECT: BUG (the mean is taken over the first half of the features only)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.eps = 1e-5

    def forward(self, x):
        mean = x[:, : x.shape[1] // 2].mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps)
