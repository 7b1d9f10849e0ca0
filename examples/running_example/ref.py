# The paper's running example (KernelBench level-2 task 36 shape), reconstructed by us:
# transposed convolution -> min over channels -> sum over height -> GELU -> + bias.
# Small shapes so that tracing and checking take seconds.
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


batch_size, in_channels, out_channels = 4, 3, 16
height = width = 32
kernel_size, stride, padding, output_padding = 3, 2, 1, 1
bias_shape = (1, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape]
