# expect: BUG evidence=timeout stage=trace reason~did\ not\ finish
# reference: ref_conv.py
# options: --trace-timeout 20
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)

    def forward(self, x):
        while True:  # a spin-wait that never sees its flag
            time.sleep(0.05)
