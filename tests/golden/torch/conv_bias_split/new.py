# EXPECT: EQUAL
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.nn.functional.conv2d(x, self.conv.weight, None, padding=1) + self.conv.bias.view(1, -1, 1, 1)
