# expect: BUG evidence=exception stage=trace reason~ValueError reason~__init__ reason~raises_in_init.py:11
# reference: ref_conv.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)
        raise ValueError(f"tile size {k} is not a multiple of 4")

    def forward(self, x):
        return torch.relu(self.conv(x))
