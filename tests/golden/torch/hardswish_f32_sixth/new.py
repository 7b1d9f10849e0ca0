# EXPECT: EQUAL
# hardswish by hand with the f32 reciprocal of 6 (0.16666667f): not equal over the reals, but the
# difference is far below the tolerance for bounded inputs (equal within tolerance).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.lin = nn.Linear(a, b)

    def forward(self, x):
        y = self.lin(x)
        return y * torch.clamp(y + 3.0, 0.0, 6.0) * 0.1666666716337204
