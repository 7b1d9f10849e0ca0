# EXPECT: BUG
# (the first of 2^20 elements of each row is skipped: the slice's sum reads x[k+1] over 2^20 - 1 points; random
# inputs stay within the tolerance, the witness sets the one element only the reference sums)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x[:, 1:].sum(dim=1)
