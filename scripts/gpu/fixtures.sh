#!/bin/bash
# GPU call: trace every example pair we wrote (examples/running_example buggy+fixed, examples/gelu_linear
# good+bad, examples/execute_bugs/*/) into bundles WITH data; they come back as $1/fixtures.tar.gz and are
# committed as the CPU test fixtures (tests/python/test_fixtures.py).
# Usage on the GPU machine, from the repo root:  bash scripts/gpu/fixtures.sh OUTDIR [SECONDS] [--dry-run]
# --dry-run traces on the CPU instead (CUDA candidates then end UNSUPPORTED: no GPU); for testing the script.
set -u
OUT=$1; LIMIT=${2:-225}; DEVICE=cuda
[ "${3:-}" = "--dry-run" ] && DEVICE=cpu
START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-fixtures.XXXXXX)
mkdir -p "$W/bundles" "$W/results" "$W/logs" "$W/ext"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=2
LOG=$W/fixtures.log
{ echo "device=$DEVICE limit=${LIMIT}s start=$(date -u +%FT%TZ) commit=$(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())'
  [ "$DEVICE" = cuda ] && timeout 60 python3 -c 'from dirigo import launch; print("shim:", launch.build_shim())'
} >"$LOG" 2>&1

# name ref candidate -- the ones that compile CUDA first (they take longest)
PAIRS=()
for d in examples/execute_bugs/*/; do
  d=${d%/}; [ -f "$d/ref.py" ] && [ -f "$d/new.py" ] && PAIRS+=("execute_bugs.$(basename "$d") $d/ref.py $d/new.py")
done
PAIRS=("running_example.buggy examples/running_example/ref.py examples/running_example/buggy.py"
       "running_example.fixed examples/running_example/ref.py examples/running_example/fixed.py"
       "${PAIRS[@]}"
       "gelu_linear.good examples/gelu_linear/ref.py examples/gelu_linear/good.py"
       "gelu_linear.bad examples/gelu_linear/ref.py examples/gelu_linear/bad.py")

for p in "${PAIRS[@]}"; do
  read -r name ref new <<<"$p"
  (
    t0=$(date +%s)
    TORCH_EXTENSIONS_DIR=$W/ext/$name timeout -k 5 $((LIMIT - 5)) python3 -m dirigo.trace "$ref" "$new" \
      --out "$W/bundles/$name" --device $DEVICE --json --timeout $((LIMIT - 20)) \
      >"$W/results/$name.json" 2>"$W/logs/$name.log"
    echo "$name rc=$? $(( $(date +%s) - t0 ))s" >>"$W/summary.txt"
  ) &
done
wait
echo "all done after $(( $(date +%s) - START ))s" >>"$LOG"
sort "$W/summary.txt" >>"$LOG"
tar czf "$OUT/fixtures.tar.gz" -C "$W" bundles results logs summary.txt fixtures.log
ls -la "$OUT"; tail -30 "$LOG"
