# expect: UNSUPPORTED stage=trace reason~environment reason~not\ installed
# reference: ref_conv.py
import torch
import torch.nn as nn

import dirigo_no_such_accelerator_library  # noqa: F401 - not on this machine


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)

    def forward(self, x):
        return torch.relu(self.conv(x))
