"""A plain numpy implementation of the cuBLAS conventions dirigo models, over a bundle library op whose
tensor references name flat float32 buffers ({"tensor": NAME, "byte_offset": B}). Independent of the C++
equations in src/blas (written from the cuBLAS documentation, vectorised, float64): the CPU tests compare
both against each other on random cases and against real-cuBLAS fixtures.

Conventions: column-major; op(X) = X or X^T; element (i, j) of an ld-strided matrix at i + j*ld (Lt's
ORDER_ROW: i*ld + j); batch b adds b*stride; beta == 0 means C is not read; alpha == 0 means A and B are
not read; a vector with inc < 0 is walked backwards from its last element (reference BLAS); sscal with
incx <= 0 does nothing. cuBLASLt epilogues: bias (one per row of D) added before ReLU / GELU (tanh form).
"""
import math

import numpy as np


def _off(args, key):
    r = args[key]
    if not isinstance(r, dict) or "tensor" not in r:
        raise ValueError(f"argument {key} is not a tensor reference")
    return r["tensor"], int(r["byte_offset"]) // 4


def _scalar(args, key, bufs):
    v = args.get(key)
    if v is None:
        buf, o = _off(args, key + "_ptr")
        return float(bufs[buf][o])
    return float(v)


def _matrix(bufs, buf, off, rows, cols, ld, order=0):
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    idx = off + (i * ld + j if order == 1 else i + j * ld)
    return idx


def _vector_index(off, n, inc):
    i = np.arange(n)
    return off + (i if inc > 0 else (n - 1 - i)) * abs(inc)


def _op(mat_idx, trans):
    return mat_idx.T if trans in ("T", "C") else mat_idx


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _gemm(out, src, a, bufs, m, n, k, alpha, beta, A, B, C, lda, ldb, ldc, epi=1, bias=None, D=None, order=(0, 0, 0, 0),
          ldd=None):
    """One (batch entry of a) GEMM. A/B/C/D are (buffer, element offset)."""
    D = D or C
    ldd = ldd or ldc
    ar, ac = (k, m) if a["transa"] in ("T", "C") else (m, k)
    br, bc = (n, k) if a["transb"] in ("T", "C") else (k, n)
    acc = np.zeros((m, n))
    if alpha != 0 and k > 0:
        ia = _op(_matrix(bufs, A[0], A[1], ar, ac, lda, order[0]), a["transa"])
        ib = _op(_matrix(bufs, B[0], B[1], br, bc, ldb, order[1]), a["transb"])
        acc = alpha * (src[A[0]].astype(np.float64)[ia] @ src[B[0]].astype(np.float64)[ib])
    if beta != 0:
        ic = _matrix(bufs, C[0], C[1], m, n, ldc, order[2])
        acc = acc + beta * src[C[0]].astype(np.float64)[ic]
    if bias is not None:
        acc = acc + src[bias[0]].astype(np.float64)[bias[1]:bias[1] + m][:, None]
    if epi & 2:
        acc = np.maximum(acc, 0)
    if epi & 32:
        acc = gelu_tanh(acc)
    idd = _matrix(bufs, D[0], D[1], m, n, ldd, order[3])
    out[D[0]][idd] = acc


def evaluate(op, bufs):
    """Buffers after the call (copies; float64), plus "__result__" for a host-mode sdot."""
    a, name = op["args"], op["name"]
    src = {k: np.asarray(v) for k, v in bufs.items()}
    out = {k: v.astype(np.float64).copy() for k, v in src.items()}
    if name in ("cublasSgemm_v2", "cublasGemmEx", "cublasSgemmStridedBatched", "cublasGemmStridedBatchedEx",
                "cublasSgemmBatched"):
        alpha, beta = _scalar(a, "alpha", src), _scalar(a, "beta", src)
        batch = int(a.get("batchCount", 1))
        for b in range(batch):
            if name == "cublasSgemmBatched":
                A, B, C = _off(a, f"A[{b}]"), _off(a, f"B[{b}]"), _off(a, f"C[{b}]")
            else:
                A, B, C = _off(a, "A"), _off(a, "B"), _off(a, "C")
                A = (A[0], A[1] + b * int(a.get("strideA", 0)))
                B = (B[0], B[1] + b * int(a.get("strideB", 0)))
                C = (C[0], C[1] + b * int(a.get("strideC", 0)))
            _gemm(out, src, a, src, a["m"], a["n"], a["k"], alpha, beta, A, B, C, a["lda"], a["ldb"], a["ldc"])
        return out
    if name == "cublasLtMatmul":
        alpha, beta = _scalar(a, "alpha", src), _scalar(a, "beta", src)
        Ad, Bd, Cd, Dd = a["Adesc"], a["Bdesc"], a["Cdesc"], a["Ddesc"]
        m, n = Dd["rows"], Dd["cols"]
        k = Ad["rows"] if a["transa"] in ("T", "C") else Ad["cols"]
        bias = _off(a, "bias") if "bias" in a else None
        for b in range(int(Dd.get("batch", 1))):
            sh = lambda key, d: (lambda r: (r[0], r[1] + b * int(d.get("stride", 0))))(_off(a, key))  # noqa: E731
            _gemm(out, src, a, src, m, n, k, alpha, beta, sh("A", Ad), sh("B", Bd), sh("C", Cd), Ad["ld"], Bd["ld"],
                  Cd["ld"], epi=int(a.get("epilogue", 1)), bias=bias if int(a.get("epilogue", 1)) & 4 else None,
                  D=sh("D", Dd), order=(Ad["order"], Bd["order"], Cd["order"], Dd["order"]), ldd=Dd["ld"])
        return out
    if name == "cublasSgeam":
        alpha, beta = _scalar(a, "alpha", src), _scalar(a, "beta", src)
        m, n = a["m"], a["n"]
        C = _off(a, "C")
        acc = np.zeros((m, n))
        for key, tr, ld, s in (("A", a["transa"], a["lda"], alpha), ("B", a["transb"], a["ldb"], beta)):
            if s != 0:
                buf, o = _off(a, key)
                rows, cols = (n, m) if tr in ("T", "C") else (m, n)
                acc = acc + s * src[buf].astype(np.float64)[_op(_matrix(src, buf, o, rows, cols, ld), tr)]
        out[C[0]][_matrix(src, C[0], C[1], m, n, a["ldc"])] = acc
        return out
    if name == "cublasSgemv_v2":
        alpha, beta = _scalar(a, "alpha", src), _scalar(a, "beta", src)
        m, n, t = a["m"], a["n"], a["trans"]
        lx, ly = (m, n) if t in ("T", "C") else (n, m)
        A, x, y = _off(a, "A"), _off(a, "x"), _off(a, "y")
        iy = _vector_index(y[1], ly, a["incy"])
        acc = np.zeros(ly)
        if alpha != 0:
            mat = src[A[0]].astype(np.float64)[_op(_matrix(src, A[0], A[1], m, n, a["lda"]), t)]
            acc = alpha * (mat @ src[x[0]].astype(np.float64)[_vector_index(x[1], lx, a["incx"])])
        if beta != 0:
            acc = acc + beta * src[y[0]].astype(np.float64)[iy]
        out[y[0]][iy] = acc
        return out
    if name == "cublasSger_v2":
        alpha = _scalar(a, "alpha", src)
        m, n = a["m"], a["n"]
        A, x, y = _off(a, "A"), _off(a, "x"), _off(a, "y")
        if alpha != 0 and m > 0 and n > 0:
            ia = _matrix(src, A[0], A[1], m, n, a["lda"])
            xv = src[x[0]].astype(np.float64)[_vector_index(x[1], m, a["incx"])]
            yv = src[y[0]].astype(np.float64)[_vector_index(y[1], n, a["incy"])]
            out[A[0]][ia] = src[A[0]].astype(np.float64)[ia] + alpha * np.outer(xv, yv)
        return out
    if name == "cublasSaxpy_v2":
        alpha = _scalar(a, "alpha", src)
        x, y = _off(a, "x"), _off(a, "y")
        ix, iy = _vector_index(x[1], a["n"], a["incx"]), _vector_index(y[1], a["n"], a["incy"])
        out[y[0]][iy] = src[y[0]].astype(np.float64)[iy] + alpha * src[x[0]].astype(np.float64)[ix]
        return out
    if name == "cublasSscal_v2":
        alpha = _scalar(a, "alpha", src)
        x = _off(a, "x")
        if a["incx"] > 0:
            ix = _vector_index(x[1], a["n"], a["incx"])
            out[x[0]][ix] = alpha * src[x[0]].astype(np.float64)[ix]
        return out
    if name == "cublasSdot_v2":
        x, y = _off(a, "x"), _off(a, "y")
        ix, iy = _vector_index(x[1], a["n"], a["incx"]), _vector_index(y[1], a["n"], a["incy"])
        v = float(src[x[0]].astype(np.float64)[ix] @ src[y[0]].astype(np.float64)[iy])
        if "result" in a:
            r = _off(a, "result")
            out[r[0]][r[1]] = v
        else:
            out["__result__"] = np.array([v])
        return out
    raise ValueError(f"no numpy reference for {name}")
