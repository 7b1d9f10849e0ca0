# EXPECT: EQUAL
# Both programs start with the same relu, so prefix trimming makes its result a free input; over a
# free input abs(y)*2 and y*2 differ (y < 0), but no program input makes relu's result negative. A
# witness over the trimmed result is no evidence: the location is decided again over x (equal).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x)
        return y * 2
