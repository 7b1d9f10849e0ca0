"""Timing: dirigo check --full of x @ w (aten::mm) against the cuBLAS row-major trick, on a bundle
synthesized as the tracer writes it. Usage: python3 examples/cublas/perf_gemm_check.py M K N (docs/perf.md)."""
import json, os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import dirigo._core as core
M, K, N = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def prog(name, role, ops):
    shapes = [(M, K), (K, N), (M, N)]
    return {"name": name, "role": role,
            "storages": [{"id": f"s{i}", "nbytes": a * b * 4} for i, (a, b) in enumerate(shapes)],
            "tensors": [{"id": f"t{i}", "storage": f"s{i}", "shape": [a, b], "strides": [b, 1], "dtype": "float32"} for i, (a, b) in enumerate(shapes)],
            "inputs": [{"name": "x", "tensor": "t0"}, {"name": "w", "tensor": "t1"}], "outputs": [{"name": "out0", "tensor": "t2"}], "ops": ops}
mm = {"kind": "aten", "name": "aten::mm", "overload": "default", "schema": "mm(Tensor self, Tensor mat2) -> Tensor",
      "args": [{"tensor": "t0"}, {"tensor": "t1"}], "kwargs": {}, "outputs": ["t2"], "mutates": []}
g = {"kind": "library", "library": "cublas", "name": "cublasSgemm_v2", "writes": ["t2"],
     "args": {"transa": "N", "transb": "N", "m": N, "n": M, "k": K, "alpha": 1.0, "beta": 0.0,
              "A": {"tensor": "t1", "byte_offset": 0}, "lda": N, "B": {"tensor": "t0", "byte_offset": 0}, "ldb": K,
              "C": {"tensor": "t2", "byte_offset": 0}, "ldc": N}}
man = {"format": "dirigo-bundle", "version": 1, "modules": [], "programs": [prog("ref", "reference", [mm]), prog("new", "candidate", [g])],
       "match": {"inputs": [["ref.x", "new.x"], ["ref.w", "new.w"]], "outputs": [["ref.out0", "new.out0"]]}}
d = f"/tmp/blasperf_{M}_{K}_{N}"; os.makedirs(d, exist_ok=True)
json.dump(man, open(d + "/manifest.json", "w"))
t = time.time(); r = json.loads(core.check_bundle(d, budget_s=120, full=True)); 
print(M, K, N, r["outcome"], r.get("checked"), round(time.time() - t, 2), "s", r.get("solver_calls"))
