"""Compiles the kernels of examples/triton/*/good.py to PTX for sm_90 (no GPU needed) into this folder.

    python tests/exec/triton/generate.py        # needs triton (scripts/install-deps.sh installs 3.6.0)

test_exec (tests/exec/test_triton.cpp) executes these files symbolically and compares every output
element with a reference computed in the test; they are committed so the C++ tests need no Triton.
`.file` paths are made relative to the repository. `gemm_pipelined` is the example GEMM with Triton's
default three pipeline stages (its loads go to shared memory through cp.async) and `dot_tf32` the
default tl.dot precision (wgmma): Execute refuses both, naming the instruction.
"""
import importlib.util
import os

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
P = "*fp32"


def example(name, variant="good"):
    path = os.path.join(ROOT, "examples", "triton", name, variant + ".py")
    spec = importlib.util.spec_from_file_location(f"ex_{name}_{variant}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def jit_fn(k):
    while not hasattr(k, "arg_names") or hasattr(k, "configs"):  # autotuner -> its jit function
        k = k.fn
    return k


@triton.jit
def dot_tf32(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """the default tl.dot: tf32 on tensor cores (wgmma on sm_90), operands through shared memory"""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


def main():
    sm, ln, gm, rs, ew = (example(n) for n in ("softmax", "layernorm", "gemm_epilogue", "rowsum", "elementwise"))
    gemm_sig = dict(a_ptr=P, w_ptr=P, bias_ptr=P, c_ptr=P, M="i32", N="i32", K="i32", sam="i32", sak="i32",
                    swn="i32", swk="i32", scm="i32", scn="i32", BM="constexpr", BN="constexpr", BK="constexpr")
    jobs = {
        "softmax": (sm.softmax_kernel, dict(out_ptr=P, in_ptr=P, in_stride="i32", out_stride="i32", n_cols="i32",
                                            BLOCK="constexpr"), {"BLOCK": 64}, dict(num_warps=4)),
        "layernorm": (ln.layernorm_kernel, dict(x_ptr=P, w_ptr=P, b_ptr=P, y_ptr=P, n_cols="i32", eps="fp32",
                                                BLOCK="constexpr"), {"BLOCK": 64}, dict(num_warps=2)),
        "gemm_epilogue": (gm.gemm_bias_relu, gemm_sig, {"BM": 16, "BN": 16, "BK": 16}, dict(num_warps=4, num_stages=1)),
        "gemm_pipelined": (gm.gemm_bias_relu, gemm_sig, {"BM": 16, "BN": 16, "BK": 16}, dict(num_warps=4)),
        "dot_tf32": (dot_tf32, dict(a_ptr=P, b_ptr=P, c_ptr=P, BM="constexpr", BN="constexpr", BK="constexpr"),
                     {"BM": 64, "BN": 64, "BK": 16}, dict(num_warps=4)),
        "rowsum": (jit_fn(rs.sum_dim1), dict(x_ptr=P, out_ptr=P, R="i32", C="i32", BLOCK="constexpr"), {"BLOCK": 16},
                   dict(num_warps=1)),
        "elementwise": (ew.swish_scale_clamp, dict(x_ptr=P, out_ptr=P, n="i32", scale="fp32", BLOCK="constexpr"),
                        {"BLOCK": 128}, dict(num_warps=4)),
    }
    # what the JIT gives when the pointers are 16-byte aligned and n is a multiple of 16: v4 accesses
    jobs["elementwise_v4"] = jobs["elementwise"][:2] + ({"BLOCK": 1024}, dict(num_warps=4))
    divisible = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]]}
    for name, (fn, sig, consts, opts) in jobs.items():
        src = ASTSource(fn, sig, consts, divisible if name == "elementwise_v4" else None)
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
        ptx = k.asm["ptx"].replace(f'"{ROOT}/', '"')
        with open(os.path.join(HERE, f"{name}.ptx"), "w") as fh:
            fh.write(ptx)
        print(name, len(ptx.splitlines()), "lines")


if __name__ == "__main__":
    main()
