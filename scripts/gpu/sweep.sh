#!/bin/bash
# GPU call: trace the picked dev-corpus pairs (.cache/sweep, from `scripts/trace-sweep.py pick`) and our
# running example into bundles; everything comes back as $1/sweep.tar.gz (corpus bundles stay in .cache/).
# Usage on the GPU machine, from the repo root:  bash scripts/gpu/sweep.sh OUTDIR [SECONDS]
set -u
OUT=$1; LIMIT=${2:-480}
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
LOG=.cache/sweep/gpu.log
mkdir -p .cache/sweep/fixtures
{ nvidia-smi -L; python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())'
  python3 -c 'from dirigo import launch; print("shim:", launch.build_shim())'; } >"$LOG" 2>&1
for ex in buggy fixed; do   # our own program: traced WITH data, committed as a fixture
  TORCH_EXTENSIONS_DIR=/tmp/ext-running-$ex timeout $LIMIT python3 -m dirigo.trace examples/running_example/ref.py \
    examples/running_example/$ex.py --out .cache/sweep/fixtures/running_$ex --device cuda --json \
    --timeout $((LIMIT - 20)) >.cache/sweep/fixtures/running_$ex.json 2>>"$LOG" &
done
timeout $LIMIT python3 scripts/trace-sweep.py run --jobs 14 --timeout $((LIMIT - 40)) >>"$LOG" 2>&1
wait
tar czf "$OUT/sweep.tar.gz" -C .cache/sweep bundles fixtures results.json pairs.json gpu.log 2>/dev/null
ls -la "$OUT"; tail -25 "$LOG"
