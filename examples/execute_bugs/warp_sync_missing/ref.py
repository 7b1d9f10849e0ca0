# Row maxima of a [16, 256] matrix (reference for examples/execute_bugs/warp_sync_missing/new.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.amax(x, dim=1)


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
