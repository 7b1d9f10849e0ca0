# EXPECT: EQUAL
# The same Linear (built first, so its values are the reference's) and a buffer `scratch` that holds
# random values where the reference's holds zeros, but that forward never reads: the values differ,
# the outputs do not, so there is no state finding (only a note). dirigo: CHECKED/VERIFIED.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.register_buffer("scratch", torch.randn(out_features))

    def forward(self, x):
        return torch.clamp(self.linear(x), min=0.0)
