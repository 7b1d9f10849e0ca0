# EXPECT: EQUAL
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        pass

    def forward(self, x):
        m = x.mean(dim=-1, keepdim=True)
        v = ((x - m) ** 2).mean(dim=-1, keepdim=True)
        return (x - m) / torch.sqrt(v + 1e-5)
