# Expected verdict: BUG global-out-of-bounds — wrong mask offs <= n: the program holding element n reads and writes one past the end.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swish_scale_clamp(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * tl.sigmoid(x) * scale
    y = tl.minimum(tl.maximum(y, -1.0), 1.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scaling_factor):
        super().__init__()
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        swish_scale_clamp[(triton.cdiv(n, 128),)](x, out, n, self.scaling_factor, BLOCK=128)
        return out
