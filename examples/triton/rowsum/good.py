# Expected verdict: CHECKED — one program per (batch, column), reducing the strided middle axis; autotuned over num_warps.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({}, num_warps=1), triton.Config({}, num_warps=2)], key=["R"])
@triton.jit
def sum_dim1(x_ptr, out_ptr, R, C, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    c = tl.program_id(1)
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + b * R * C + r * C + c, mask=r < R, other=0.0)
    tl.store(out_ptr + b * C + c, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, R, C = x.shape
        out = torch.empty((B, 1, C), device=x.device, dtype=x.dtype)
        sum_dim1[(B, C)](x, out, R, C, BLOCK=triton.next_power_of_2(R))
        return out
