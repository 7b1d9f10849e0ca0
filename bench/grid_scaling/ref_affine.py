# Reference of elementwise.cu / wrong_constant.cu: y = 0.5 * x + 1 on a flat vector.
import os
import torch
import torch.nn as nn

N = int(os.environ.get("GRID_SCALING_N", "1024"))


class Model(nn.Module):
    def forward(self, x):
        return 0.5 * x + 1.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
