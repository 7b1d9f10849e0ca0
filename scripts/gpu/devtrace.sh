#!/bin/bash
# GPU call: trace one slice of the dev-corpus pairs (a sweep folder made by `scripts/trace-sweep.py pick` /
# `scripts/corpus-eval.py pick`, carried) with trace-sweep's tracer (--no-data), inside one wall-clock
# limit, plus (with --today) the running example at today's KernelBench shapes (examples/running_example/
# ref_today.py against buggy.py and fixed.py, no data: the input alone is 64 MiB). Writes OUTDIR/<name>.tar.gz
# with bundles/NNN, results.json, log.txt and today/ (corpus-derived bundles stay in .cache/).
# Usage from the repo root:  bash scripts/gpu/devtrace.sh SWEEP OUTDIR [SECONDS] [--today]
set -u
SWEEP=${1:?usage: devtrace.sh SWEEP OUTDIR [SECONDS] [--today]}; OUT=${2:?}; LIMIT=${3:-560}
NAME=$(basename "$SWEEP"); JOBS=${SWEEP_JOBS:-16}; START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-devtrace.XXXXXX); LOG=$W/log.txt; mkdir -p "$W/today"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-2}
finish() {
  echo "finished after $(( $(date +%s) - START ))s" >>"$LOG"
  cp "$LOG" "$SWEEP/log.txt"; cp -r "$W/today" "$SWEEP/" 2>/dev/null
  (cd "$SWEEP" && tar czf "$OUT/$NAME.tar.gz" --exclude='ext' log.txt pairs.json today $(ls -d bundles results.json 2>/dev/null))
  ls -la "$OUT"
}
trap finish EXIT
trap 'echo "killed (TERM) after $(( $(date +%s) - START ))s" >>"$LOG"; exit 143' TERM
{ echo "limit=${LIMIT}s jobs=$JOBS start=$(date -u +%FT%TZ) pairs=$(ls $SWEEP/*_new.py | wc -l)"
  nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())' 2>&1
  timeout 60 python3 -c 'from dirigo import launch; print("shim:", launch.build_shim())' 2>&1
} >"$LOG" 2>&1
if [ "${4:-}" = "--today" ]; then
  for ex in buggy fixed; do
    ( TORCH_EXTENSIONS_DIR=$W/ext-today-$ex timeout $((LIMIT - 40)) python3 -m dirigo.trace \
        examples/running_example/ref_today.py examples/running_example/$ex.py --out "$W/today/bundle-gpu-today-$ex" \
        --device cuda --no-data --json --timeout $((LIMIT - 60)) >"$W/today/$ex.json" 2>"$W/today/$ex.log"
      echo "today $ex rc=$?" >>"$LOG" ) &
  done
fi
left=$(( START + LIMIT - 20 - $(date +%s) ))
timeout -k 5 $left python3 scripts/corpus-eval.py trace --sweep "$SWEEP" --results results.json \
  --limit $(( left - 5 )) --jobs $JOBS --min-left ${SWEEP_MIN_LEFT:-110} >>"$LOG" 2>&1 &
wait
rm -rf "$SWEEP/ext"
