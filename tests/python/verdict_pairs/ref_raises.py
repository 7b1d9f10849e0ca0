# reference that raises: any candidate is UNSUPPORTED against it (nothing to compare with)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)

    def forward(self, x):
        raise RuntimeError("reference broken on purpose")


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return [3, 4, 3]
