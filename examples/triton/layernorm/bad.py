# Expected verdict: BUG witness — wrong mask: the padded lanes (x = 0) enter the variance as mean², so rstd is too small.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = x - mean
    var = tl.sum(d * d, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * n_cols + offs, d * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        n = self.ln.weight.numel()
        rows = x.numel() // n
        y = torch.empty_like(x)
        layernorm_kernel[(rows,)](x, self.ln.weight, self.ln.bias, y, n, self.ln.eps,
                                  BLOCK=triton.next_power_of_2(n), num_warps=2)
        return y
