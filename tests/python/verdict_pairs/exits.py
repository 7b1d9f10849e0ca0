# expect: BUG evidence=crash stage=trace reason~exited\ with\ status\ 3
# reference: ref_conv.py
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)

    def forward(self, x):
        os._exit(3)  # what an extension's abort() or exit() does to the process
