# Expected verdict: CHECKED — tiled tl.dot (fp32, input_precision="ieee") with the bias and ReLU fused into the epilogue.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_bias_relu(a_ptr, w_ptr, bias_ptr, c_ptr, M, N, K, sam, sak, swn, swk, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + kk[:, None] * swk + rn[None, :] * swn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        M, K = x.shape
        w = self.gemm.weight
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        BM, BN, BK = 16, 16, 16
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        gemm_bias_relu[grid](x, w, self.bias, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                             out.stride(0), out.stride(1), BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=1)
        return out
