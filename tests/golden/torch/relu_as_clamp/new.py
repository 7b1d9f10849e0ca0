# EXPECT: EQUAL
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        pass

    def forward(self, x):
        return torch.clamp(x, min=0.0) + 1
