# EXPECT: VERIFIED
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.sum(dim=1).sum(dim=0)
