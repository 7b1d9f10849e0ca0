#!/bin/bash
# GPU call A (session 3): trace 40 more dev-corpus level-2 pairs (.cache/sweep3, picked on the CPU by
# `scripts/corpus-eval.py pick`: 28 KernelBench output_mismatch + 12 correct, numbered 080..119) with the
# same options as sweeps 1-2 (trace-sweep.py's tracer, --no-data), inside one wall-clock slice, and write
# $1/sweep3.tar.gz: bundles/NNN, results3.json, pairs.json, log.txt.
# Usage from the repo root:  bash scripts/gpu/sweep3.sh OUTDIR [SECONDS] [--dry-run]
# --dry-run (no GPU): two pairs only, 60 s; the tracer then answers "error" (no CUDA), which tests the plumbing.
set -u
OUT=${1:?usage: sweep3.sh OUTDIR [SECONDS] [--dry-run]}; LIMIT=${2:-505}  # the call kills at its own limit (520)
SWEEP=.cache/sweep3; JOBS=${SWEEP_JOBS:-12}
START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-sweep3.XXXXXX)
LOG=$W/log.txt
if [ "${3:-}" = "--dry-run" ]; then  # a copy with two pairs, so the real pair list is untouched
  mkdir -p "$W/sweep3"; cp $SWEEP/08[01]_*.py "$W/sweep3/"
  python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))[:2], open(sys.argv[2], "w"))' \
    $SWEEP/pairs.json "$W/sweep3/pairs.json"
  SWEEP=$W/sweep3; LIMIT=${2:-60}
fi
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-2}
finish() {  # always leave a tarball, whatever happened
  echo "finished after $(( $(date +%s) - START ))s" >>"$LOG"
  cp "$LOG" "$SWEEP/log.txt"
  (cd "$SWEEP" && tar czf "$OUT/sweep3.tar.gz" --exclude='ext' log.txt pairs.json $(ls -d bundles results3.json 2>/dev/null))
  ls -la "$OUT"
}
trap finish EXIT
trap 'echo "killed (TERM) after $(( $(date +%s) - START ))s" >>"$LOG"; exit 143' TERM  # the call's timeout: still pack
# the work runs in the background and the shell waits for it: a TERM (the call's own timeout) then runs
# the trap at once instead of after the running child
{ echo "limit=${LIMIT}s jobs=$JOBS start=$(date -u +%FT%TZ) commit=$(git rev-parse --short HEAD 2>/dev/null) pairs=$(ls $SWEEP/*_new.py | wc -l)"
  nvidia-smi -L 2>&1 | head -4; nproc
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())' 2>&1
  timeout 60 python3 -c 'from dirigo import launch; print("shim:", launch.build_shim())' 2>&1
} >"$LOG" 2>&1 &
wait $!
# the tracing gets what is left of the slice minus 20 s for the tarball
left=$(( START + LIMIT - 20 - $(date +%s) ))
timeout -k 5 $left python3 scripts/corpus-eval.py trace --sweep "$SWEEP" --limit $(( left - 5 )) --jobs $JOBS \
  --min-left ${SWEEP_MIN_LEFT:-130} >>"$LOG" 2>&1 &
wait $!
echo "trace rc=$?" >>"$LOG"
rm -rf "$SWEEP/ext"
