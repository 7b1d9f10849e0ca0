# The paper's running example at the shapes KernelBench ships today (level-2 task 36): batch 16,
# 64 -> 128 channels, a 128x128 input, so each output location sums 256 row minima, each over 128
# channels of a transposed convolution. Same program as ref.py; buggy.py and fixed.py are its candidates.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding, output_padding)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.min(x, dim=1, keepdim=True)[0]
        x = torch.sum(x, dim=2, keepdim=True)
        x = torch.nn.functional.gelu(x)
        return x + self.bias


batch_size, in_channels, out_channels = 16, 64, 128
height = width = 128
kernel_size, stride, padding, output_padding = 3, 2, 1, 1
bias_shape = (1, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape]
