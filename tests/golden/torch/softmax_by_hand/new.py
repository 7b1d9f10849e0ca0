# EXPECT: EQUAL
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        pass

    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=1, keepdim=True)
