# EXPECT: BUG
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        pass

    def forward(self, x):
        return x.sum(dim=1)
