#!/bin/bash
# GPU call: trace every Triton example pair (examples/triton/<example>/{good,bad,...}.py against its
# ref.py) on the GPU into bundles WITH data (the kernels run; Triton JIT-compiles them, no load_inline),
# and note each pair's recorded output difference (KernelBench's own allclose test). Nothing is checked
# here (no Z3 on the GPU machine): the bundles come back in $1/triton.tar.gz and are committed as
# examples/triton/<example>/bundle-gpu-<variant>/ (tests/python/test_fixtures.py checks them).
# Usage on the GPU machine, from the repo root:  bash scripts/gpu/triton.sh OUTDIR [SECONDS] [--dry-run]
# --dry-run traces on the CPU instead (Triton compile-only, bundle-<variant> names); for testing the script.
set -u
OUT=$1; LIMIT=${2:-225}; DEVICE=cuda
[ "${3:-}" = "--dry-run" ] && DEVICE=cpu
START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-triton.XXXXXX)
mkdir -p "$W/bundles" "$OUT"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=$W/triton-cache
LOG=$W/triton.log
{ echo "device=$DEVICE limit=${LIMIT}s start=$(date -u +%FT%TZ) commit=$(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import torch, triton, sys; print(sys.version.split()[0], torch.__version__, "triton", triton.__version__,
              "cuda", torch.cuda.is_available())'
} >"$LOG" 2>&1
# all pairs at once (each trace runs two worker processes); the per-pair timeout leaves room to pack up
timeout -k 5 $((LIMIT - 10)) python3 examples/triton/trace_examples.py --device $DEVICE --out "$W/bundles" \
  --jobs 12 --timeout $((LIMIT - 25)) --results "$W/results.json" >>"$LOG" 2>&1
echo "trace_examples rc=$? after $(( $(date +%s) - START ))s" >>"$LOG"
python3 - "$W/results.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    outs = r.get("outputs") or {}
    diff = ", ".join(f"{k}: max|ref-new| {v['max_abs_diff']:.3g}{' NaN' if v['nan'] else ''}"
                     f" allclose {v['allclose_1e-2']}" for k, v in outs.items()) or "no output data"
    print(f"{r['example']}/{r['variant']}: {r['status']} {r['seconds']}s; {diff}")
PY
echo "all done after $(( $(date +%s) - START ))s" >>"$LOG"
tar czf "$OUT/triton.tar.gz" -C "$W" bundles results.json triton.log
ls -la "$OUT"; tail -20 "$LOG"
