# Expected verdict: EQUAL — GELU written out by hand with erf, same meaning.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = self.linear(x)
        return y * (1.0 + torch.erf(y / math.sqrt(2.0)))
