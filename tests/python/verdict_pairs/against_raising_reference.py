# expect: UNSUPPORTED stage=trace reason~the\ reference\ failed reason~reference\ broken\ on\ purpose
# reference: ref_raises.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)

    def forward(self, x):
        return torch.relu(self.conv(x))
