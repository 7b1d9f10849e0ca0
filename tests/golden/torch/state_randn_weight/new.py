# EXPECT: BUG
# The right function of (x, weight, bias), but the weight is drawn with torch.randn (std 1) instead of
# nn.Linear's kaiming-uniform bound 1/sqrt(32): as KernelBench constructs the two models, their outputs
# differ. dirigo: BUG from the state stage (stage "state", evidence state-replay-cpu).
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        return torch.clamp(F.linear(x, self.weight, self.bias), min=0.0)
