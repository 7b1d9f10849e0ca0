# reference of the verdict pairs: a small convolution then ReLU
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return [3, 4, 3]
