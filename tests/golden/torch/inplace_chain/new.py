# EXPECT: EQUAL
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        pass

    def forward(self, x):
        y = x.clone()
        y.mul_(2).add_(1).relu_()
        return y
