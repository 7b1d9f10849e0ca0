# expect: BUG evidence=exception stage=trace reason~TypeError reason~raises_in_forward.py:14
# reference: ref_conv.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=1)

    def forward(self, x):
        y = self.conv(x)
        step = self.conv.stride + 1  # stride is a tuple (1, 1), not an int
        return torch.relu(y[:, :, ::step])
