# expect: BUG evidence=call-history stage=trace reason~changes\ its\ input
# reference: ref_conv.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        x.zero_()  # a later reference run on the same tensor sees zeros
        return y
