# Layer norm over 16384 features.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features, elementwise_affine=False)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return [16384]
