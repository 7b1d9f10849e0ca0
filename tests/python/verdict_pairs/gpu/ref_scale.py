# reference of the GPU verdict pairs: y = 2x + 1
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2 + 1


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
