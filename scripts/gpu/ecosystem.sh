#!/bin/bash
# GPU call for issue 21: `dirigo sweep` over CUDA pairs with --device cuda (tracing and the replay/state
# stage on the GPU, checks on the CPU cores), and warm `dirigo.check()` calls on the GPU. The device host
# has no Z3 and may have no Ray: the C++ core's shared libraries travel in .cache/ecosystem/lib (copied
# from this machine by `--prepare`), and without Ray the sweep runs with --executor local (the same three
# steps in thread pools). Pairs: the running example's buggy and fixed kernels (each a load_inline build)
# and the pure-PyTorch gelu_linear pairs, traced on the GPU.
# Writes OUTDIR/ecosystem.tar.gz: results.jsonl, summary.txt, sweep.err, warm.json, log.txt.
# Usage from the repo root:
#   bash scripts/gpu/ecosystem.sh --prepare            (here, once: the extension for the device's Python
#                                                       3.12 and the libraries the core links)
#   bash scripts/gpu/ecosystem.sh OUTDIR [SECONDS] [--dry-run]   (--dry-run: --device cpu, on this machine)
set -u
if [ "${1:-}" = "--prepare" ]; then
  # The device's interpreter is Python 3.12 (torch 2.11+cu130): the extension is built for it beside this
  # machine's, in build312/ (the static libraries come from ccache when build/ was built).
  PY312=${DIRIGO_DEVICE_PYTHON:-$(command -v python3.12)}
  cmake -S . -B build312 -G Ninja -DCMAKE_BUILD_TYPE=Release -DDIRIGO_BUILD_TESTS=OFF -DDIRIGO_BUILD_BENCH=OFF \
    -DPython_EXECUTABLE="$PY312" -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" >/dev/null || exit 1
  cmake --build build312 -j "${JOBS:-2}" --target _core || exit 1
  mkdir -p .cache/ecosystem/lib
  for l in $(ldd python/dirigo/_core*.so | awk '/=>/ {print $3}' | grep -E 'libz3|libgmp|libfmt'); do cp -L "$l" .cache/ecosystem/lib/; done
  ls -la .cache/ecosystem/lib; exit 0
fi
OUT=${1:?usage: ecosystem.sh OUTDIR [SECONDS] [--dry-run]}; LIMIT=${2:-230}; DRY=${3:-}
DEV=cuda; [ "$DRY" = "--dry-run" ] && DEV=cpu
START=$(date +%s); W=$(mktemp -d /tmp/dirigo-eco.XXXXXX); mkdir -p "$W/eco" "$W/ext"
LOG=$W/eco/log.txt
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=4 TORCH_EXTENSIONS_DIR=$W/ext
export LD_LIBRARY_PATH=$PWD/.cache/ecosystem/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
finish() { echo "done after $(( $(date +%s) - START ))s" >>"$LOG"; tar czf "$OUT/ecosystem.tar.gz" -C "$W" eco; }
trap finish EXIT
{ echo "limit=${LIMIT}s device=$DEV start=$(date -u +%FT%TZ)"; nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())' 2>&1
  python3 -c 'import dirigo; print("core:", dirigo._core is not None, getattr(dirigo, "_core_import_error", ""))' 2>&1
  python3 -c 'import ray; print("ray", ray.__version__)' 2>&1 | tail -1
} >"$LOG" 2>&1
EX=ray; python3 -c 'import ray' 2>/dev/null || EX=local
R=$PWD/examples
cat >"$W/pairs.jsonl" <<JSONL
{"id": "running_buggy", "ref": "$R/running_example/ref.py", "new": "$R/running_example/buggy.py"}
{"id": "running_fixed", "ref": "$R/running_example/ref.py", "new": "$R/running_example/fixed.py"}
{"id": "gelu_bad", "ref": "$R/gelu_linear/ref.py", "new": "$R/gelu_linear/bad.py"}
{"id": "gelu_good", "ref": "$R/gelu_linear/ref.py", "new": "$R/gelu_linear/good.py"}
JSONL
[ "$DEV" = cpu ] && sed -i '/running_/d' "$W/pairs.jsonl"  # the CUDA builds need the GPU host
echo "executor=$EX" >>"$LOG"
timeout $((LIMIT - 60)) python3 -m dirigo.sweep "$W/pairs.jsonl" --out "$W/eco/results.jsonl" --device $DEV \
  --executor $EX --budget 20 --trace-timeout $((LIMIT - 80)) >"$W/eco/summary.txt" 2>"$W/eco/sweep.err"
echo "sweep: exit $? after $(( $(date +%s) - START ))s" >>"$LOG"
# Warm calls on the tracing device: the first starts the worker, the others reuse it.
timeout 50 python3 - "$DEV" >"$W/eco/warm.json" 2>>"$LOG" <<'PY'
import json, sys, time
import dirigo
dev = sys.argv[1]
ts, out = [], []
for _ in range(3):
    t = time.monotonic()
    v = dirigo.check("examples/gelu_linear/ref.py", "examples/gelu_linear/bad.py", device=dev, budget_s=10)
    ts.append(round(time.monotonic() - t, 3)); out.append([v.outcome, v.evidence])
print(json.dumps({"device": dev, "seconds": ts, "verdicts": out}))
PY
echo "warm: exit $? after $(( $(date +%s) - START ))s" >>"$LOG"
