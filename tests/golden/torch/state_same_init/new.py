# EXPECT: EQUAL
# Its own parameters, initialized the way nn.Linear does (kaiming_uniform_ with a = sqrt(5), bias
# uniform in ±1/sqrt(fan_in)) and in the same order: the same values under the same seed, so the state
# stage has nothing to report. dirigo: CHECKED/VERIFIED, state NONE.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1 / math.sqrt(in_features)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return torch.clamp(F.linear(x, self.weight, self.bias), min=0.0)
