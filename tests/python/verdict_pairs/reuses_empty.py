# expect: BUG evidence=call-history stage=trace reason~memory\ it\ never\ wr
# reference: ref_conv.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=1)
        self.cout, self.k = cout, k

    def forward(self, x):
        n, _, h, w = x.shape
        # never written: right after the reference ran, the allocator hands back the reference's output
        return torch.empty(n, self.cout, h - self.k + 1, w - self.k + 1)
