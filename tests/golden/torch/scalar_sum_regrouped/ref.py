# A one-location output: every location proven equal is VERIFIED, even below the 5-location minimum.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum()


def get_inputs():
    return [torch.randn(4, 3)]


def get_init_inputs():
    return []
