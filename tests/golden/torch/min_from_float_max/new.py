# EXPECT: EQUAL
# a running minimum started at FLT_MAX, as a kernel's `m = FLT_MAX; m = fminf(m, v)` loop
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.lin = nn.Linear(a, b)

    def forward(self, x):
        y = self.lin(x)
        m = torch.full((y.shape[0], 1), 3.4028234663852886e38)
        for c in range(y.shape[1]):
            m = torch.minimum(m, y[:, c:c + 1])
        return torch.tanh(m)
