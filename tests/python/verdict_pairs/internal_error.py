# expect: ERROR reason~internal\ error reason~please\ report\ with\ the\ bundle
# reference: ref_conv.py
# env: DIRIGO_INJECT_FAULT=check
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)

    def forward(self, x):
        return torch.clamp(self.conv(x), min=0)
