#!/bin/bash
# Re-trace on the GPU the corpus pairs whose call-1/2 bundles captured a constant tensor (`"constant": true`
# inputs, e.g. torch.tensor(0.5) in forward): the tracer of those calls dropped the constant's values under
# --no-data, so check saw a free input (false positives 016, 067). Same options as the sweep (docs/evaluation.md:
# trace-sweep.py run --jobs 8, which passes --no-data); the tracer now always stores constants' values.
# The pair list is made on the CPU side, where the old bundles are:
#   python3 scripts/trace-sweep.py constants .cache/gpu-results/call1/bundles .cache/gpu-results/call2/sweep2/bundles \
#       > .cache/sweep/retrace-pairs.txt
# Usage: bash scripts/gpu/retrace.sh OUT [--dry-run]   (--dry-run: same plumbing on the CPU; CUDA candidates
# then end UNSUPPORTED "needs a GPU"). Writes OUT/retrace.tar.gz (bundles, results.json, log) even when the
# call's own timeout TERMs it. RETRACE_LIMIT (default 480 s) bounds the work inside the call's slice.
set -u
OUT=$1; DRY=${2:-}
LIMIT=${RETRACE_LIMIT:-480}
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-2}
W=.cache/sweep/retrace
rm -rf "$W"; mkdir -p "$W/bundles"
LOG=$W/retrace.log
DEV=cuda; [ "$DRY" = --dry-run ] && DEV=cpu
finish() {  # always leave a tarball
  date -u >> "$LOG"
  tar czf "$OUT/retrace.tar.gz" -C "$W" .
  ls -la "$OUT"
}
trap finish EXIT
work() {
  date -u; nvidia-smi -L 2>&1 | head -2; echo "cores: $(nproc)"
  if [ $DEV = cuda ]; then timeout 120 python3 -c 'from dirigo import launch; print("shim:", launch.build_shim())'; fi
  PAIRS=$(tr '\n' ' ' < .cache/sweep/retrace-pairs.txt)
  echo "pairs: $PAIRS"
  # whole-trace deadline LIMIT-90 s per pair; the outer timeout leaves time to pack
  timeout -k 5 $((LIMIT - 40)) python3 scripts/trace-sweep.py run --jobs 8 --timeout $((LIMIT - 90)) \
    --device $DEV --pairs $PAIRS --bundles "$W/bundles" --results "$W/results.json"
  echo "trace-sweep exit $?"
  # every constant input of every new bundle must carry its values now
  timeout 20 python3 - "$W/bundles" <<'PY'
import json, os, sys
root = sys.argv[1]
for k in sorted(os.listdir(root)):
    m = os.path.join(root, k, "manifest.json")
    if not os.path.exists(m):
        print(k, "no bundle"); continue
    for p in json.load(open(m))["programs"]:
        for i in p["inputs"]:
            if i.get("constant"):
                print(k, p["name"], i["name"], "data:", i.get("data"), "missing:", i.get("data_missing"))
PY
}
work >> "$LOG" 2>&1 &  # in the background, so that a TERM runs the trap at once
WORK=$!
trap 'echo "killed (TERM)" >> "$LOG"; pkill -TERM -P $WORK; kill $WORK; exit 143' TERM
wait $WORK
