"""dirigo's cuBLAS equations against REAL cuBLAS: fixtures recorded on an NVIDIA H200 by
examples/cublas/validate_ext.py (scripts/gpu/cublas.sh), one .npz per function, each case with its inputs,
cuBLAS's outputs and the library op it performed. Also: the cuBLAS shim's own records of the real calls
(fixtures_shim) describe the same call as the op we meant, and `dirigo check` on our own cuBLAS
candidates traced on the GPU gives the expected verdicts (CHECKED/VERIFIED for the correct GEMM, BUG for
the two row/column-major confusions)."""
import glob
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples", "cublas")
sys.path.insert(0, EX)

import numpy_ref  # noqa: E402

FIXTURES = sorted(glob.glob(os.path.join(EX, "fixtures", "*.npz")))
SHIM_FIXTURES = sorted(glob.glob(os.path.join(EX, "fixtures_shim", "*.npz")))

core = pytest.importorskip("dirigo._core")
needs_blas = pytest.mark.skipif(not hasattr(core, "blas_evaluate"), reason="dirigo._core built without src/blas")


def cases(path):
    z = np.load(path, allow_pickle=False)
    meta = json.loads(str(z["meta"]))
    for i, e in enumerate(meta):
        if e.get("status") != 0:
            continue
        bins = {b: z[f"c{i}.{b}.in"].astype(np.float64) for b in e["buffers"]}
        bouts = {b: z[f"c{i}.{b}.out"].astype(np.float64) for b in e["buffers"]}
        yield i, e, bins, bouts


def tolerance(op, bins):
    """fp32 accumulation error bound: the same op on |inputs| with |alpha|, |beta| gives sum |terms|."""
    a = json.loads(json.dumps(op))
    for k in ("alpha", "beta"):
        if isinstance(a["args"].get(k), (int, float)):
            a["args"][k] = abs(a["args"][k])
    absb = {k: np.abs(np.nan_to_num(v, nan=0.0)) for k, v in bins.items()}
    if "scal" in absb:
        absb["scal"] = np.abs(bins["scal"])
    scale = numpy_ref.evaluate(a, absb)
    return {k: 3e-5 * np.abs(scale[k]) + 1e-6 for k in bins}


def dirigo_eval(op, bins):
    res = core.blas_evaluate(json.dumps(op), {k: [float(x) for x in v] for k, v in bins.items()})
    return {k: np.array(res.get(k, v), dtype=np.float64) for k, v in bins.items()}


def compare(got, want, tol, what):
    for k in want:
        g, w = got[k], want[k]
        ok = (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol[k])
        assert ok.all(), (f"{what}: {k} differs at {np.flatnonzero(~ok)[:6]}: dirigo {g[~ok][:6]} vs cuBLAS "
                          f"{w[~ok][:6]}")


def _host_dot(e):
    op = json.loads(json.dumps(e["op"]))
    if e["name"] == "cublasSdot_v2" and "result" not in op["args"]:
        op["args"]["result"] = {"tensor": "res", "byte_offset": 4}  # the value came back into res[1]
    return op


@pytest.mark.skipif(not FIXTURES, reason="no real-cuBLAS fixtures yet (scripts/gpu/cublas.sh)")
@needs_blas
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_equations_match_real_cublas(path):
    n = 0
    for i, e, bins, bouts in cases(path):
        op = _host_dot(e)
        tol = tolerance(op, bins)
        compare(dirigo_eval(op, bins), bouts, tol, f"{os.path.basename(path)} case {i} {e['op']['args']}")
        n += 1
    assert n > 0, "no case ran successfully on the GPU"


@pytest.mark.skipif(not FIXTURES, reason="no real-cuBLAS fixtures yet (scripts/gpu/cublas.sh)")
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_numpy_reference_matches_real_cublas(path):
    for i, e, bins, bouts in cases(path):
        op = _host_dot(e)
        want = numpy_ref.evaluate(op, bins)
        compare({k: want[k] for k in bins}, bouts, tolerance(op, bins), f"numpy {os.path.basename(path)} case {i}")


@pytest.mark.skipif(not SHIM_FIXTURES, reason="no shim-recorded fixtures yet (scripts/gpu/cublas.sh)")
@pytest.mark.parametrize("path", SHIM_FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_shim_records_of_real_calls_describe_the_call(path):
    """Every argument the op meant is in the shim's record of the real call, with the same value (the
    record has more: handle state, stream)."""
    n = 0
    for i, e, bins, bouts in cases(path):
        recs = e.get("recorded") or []
        assert len(recs) == 1, f"case {i}: {len(recs)} records"
        rec = recs[0]
        assert rec["name"] == e["name"]
        for k, v in e["op"]["args"].items():
            got = rec["args"].get(k)
            if isinstance(v, dict) and "rows" in v:  # an Lt layout: the attributes we set
                assert {kk: got.get(kk) for kk in v} == v, f"case {i} {k}: {got} vs {v}"
            elif isinstance(v, float) and isinstance(got, (int, float)):
                assert abs(got - v) <= 1e-6 * max(1, abs(v)), f"case {i} {k}: {got} vs {v}"
            else:
                assert got == v, f"case {i} {k}: recorded {got}, meant {v}"
        n += 1
    assert n > 0


BUNDLES = {"gemm_ok": ("CHECKED", "VERIFIED"), "gemm_rowmajor_args": ("BUG",), "gemm_colmajor_out": ("BUG",),
           "lt_bias_gelu": ("CHECKED", "VERIFIED")}
LIBRARY_CALL = {"lt_bias_gelu": "cublasLtMatmul"}


@pytest.mark.skipif(not hasattr(core, "check_bundle"), reason="dirigo._core without check")
@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_traced_cublas_candidates_get_the_expected_verdict(name):
    bundle = os.path.join(EX, name, "bundle")
    if not os.path.exists(os.path.join(bundle, "manifest.json")):
        pytest.skip(f"{name}: not traced on a GPU yet")
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    new = next(p for p in manifest["programs"] if p["role"] == "candidate")
    assert any(op["kind"] == "library" and op["name"] == LIBRARY_CALL.get(name, "cublasSgemm_v2") for op in new["ops"])
    assert not any(op["kind"] == "launch" and "gemm" in op["kernel"].lower() and "bias_relu" not in op["kernel"]
                   for op in new["ops"]), "a cuBLAS-internal kernel was recorded as a user launch"
    report = json.loads(core.check_bundle(bundle, budget_s=60, full=True))
    assert report["outcome"] in BUNDLES[name], report
    if report["outcome"] == "BUG":
        assert report["evidence"] == "fp32-evaluation"


@pytest.mark.skipif(not FIXTURES, reason="no real-cuBLAS fixtures yet (scripts/gpu/cublas.sh)")
@needs_blas
def test_lt_gelu_epilogue_is_the_tanh_form():
    """cuBLASLt's GELU epilogue is the tanh approximation: dirigo's equation is within fp32 noise of cuBLAS,
    while the erf form would be ~5e-4 off on these cases (so the fixtures can tell the two apart)."""
    import math
    path = os.path.join(EX, "fixtures", "lt_matmul.npz")
    seen = 0
    for i, e, bins, bouts in cases(path):
        if not e["op"]["args"]["epilogue"] & 32:
            continue
        got, want = dirigo_eval(e["op"], bins)["D"], bouts["D"]
        m = ~np.isnan(want)
        assert np.abs(got - want)[m].max() < 2e-5, f"case {i}"
        orig = numpy_ref.gelu_tanh
        try:
            numpy_ref.gelu_tanh = np.vectorize(lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))))
            erf_form = numpy_ref.evaluate(e["op"], bins)["D"]
        finally:
            numpy_ref.gelu_tanh = orig
        assert np.abs(erf_form - want)[m].max() > 1e-4, f"case {i}: the fixture cannot tell erf from tanh"
        seen += 1
    assert seen > 0
