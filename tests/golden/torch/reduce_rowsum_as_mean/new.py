# EXPECT: EQUAL
# (a sum over 8192 elements is one Reduce node on both sides: decided without expanding)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.mean(dim=1) * x.shape[1]
