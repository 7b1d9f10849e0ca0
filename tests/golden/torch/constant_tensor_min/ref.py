import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d, then a minimum with a captured constant tensor (KernelBench level 2 #31's pattern)."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)

    def forward(self, x):
        x = self.conv(x)
        x = torch.min(x, torch.tensor(0.5))
        return x * 2.0


def get_inputs():
    return [torch.randn(2, 2, 6, 6)]


def get_init_inputs():
    return []
