#!/bin/bash
# GPU call 2 (check helper, issue 5 item 5): replays every witness file .cache/eval/witnesses/*.json
# (dirigo-witness JSON, docs/check.md; written by the eval helper, naming the corpus program copies under
# .cache/sweep/) on the GPU with `python -m dirigo.replay`, a few at a time, each with its own
# TORCH_EXTENSIONS_DIR and a timeout, and writes $1/replay.tar.gz: replay/<name>.json (the dirigo-replay
# answer), replay/<name>.err (the programs' stderr), replay/summary.json, replay/log.txt.
# Usage from the repo root:  bash scripts/gpu/replay.sh OUTDIR [SECONDS] [--dry-run]
# --dry-run (no GPU): replays on the CPU (CUDA programs then answer "unsupported"); for testing the script.
set -u
OUT=${1:?usage: replay.sh OUTDIR [SECONDS] [--dry-run]}; LIMIT=${2:-285}; DEVICE=cuda
[ "${3:-}" = "--dry-run" ] && DEVICE=cpu
PAR=${REPLAY_PAR:-6}          # concurrent replays (each may compile an extension: ~60-75 s of one core)
PER=${REPLAY_TIMEOUT:-200}    # seconds per witness
WDIR=${WITNESS_DIR:-.cache/eval/witnesses}
START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-replay.XXXXXX)
mkdir -p "$W/replay" "$W/ext"
LOG=$W/replay/log.txt
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=2 START LIMIT PER W DEVICE LOG
finish() {  # always leave a tarball, whatever happened
  python3 - "$W/replay" <<'PY' >>"$LOG" 2>&1
import json, os, sys
d = sys.argv[1]
rows = {}
for f in sorted(os.listdir(d)):
    if f.endswith(".json") and f != "summary.json":
        try:
            rows[f[:-5]] = json.load(open(os.path.join(d, f)))
        except Exception as e:  # a replay killed mid-write
            rows[f[:-5]] = {"status": "error", "message": f"no answer: {e}"}
count = {}
for r in rows.values():
    k = r.get("status", "?") + ("/reproduced" if r.get("exceeds") else "/not-reproduced" if r.get("status") == "replayed" else "")
    count[k] = count.get(k, 0) + 1
json.dump({"counts": count, "replays": {k: {x: v.get(x) for x in ("status", "exceeds", "reference", "candidate",
           "difference", "allowed", "evidence", "message", "seconds")} for k, v in rows.items()}},
          open(os.path.join(d, "summary.json"), "w"), indent=1)
print("summary:", count)
PY
  tar czf "$OUT/replay.tar.gz" -C "$W" replay
}
trap finish EXIT
{ echo "device=$DEVICE limit=${LIMIT}s par=$PAR per=${PER}s start=$(date -u +%FT%TZ) commit=$(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())' 2>&1
  echo "witnesses: $(ls $WDIR/*.json 2>/dev/null | wc -l) in $WDIR"
} >"$LOG" 2>&1

replay_one() {  # $1 = witness file; skipped when too little of the slice is left to finish it
  name=$(basename "$1" .json)
  left=$(( START + LIMIT - 15 - $(date +%s) ))
  if [ $left -lt 20 ]; then echo "$name skipped: ${left}s left" >>"$LOG"; return; fi
  t=$(( left < PER ? left : PER ))
  t0=$(date +%s)
  TORCH_EXTENSIONS_DIR=$W/ext/$name timeout -k 5 $t python3 -m dirigo.replay "$1" --json --device "$DEVICE" \
    >"$W/replay/$name.json.tmp" 2>"$W/replay/$name.err"
  rc=$?
  # user code (load_inline builds) may print to stdout too: the answer is the last JSON line
  grep '^{' "$W/replay/$name.json.tmp" | tail -1 >"$W/replay/$name.json"; rm -f "$W/replay/$name.json.tmp"
  [ -s "$W/replay/$name.json" ] || echo "{\"status\": \"error\", \"message\": \"no answer (exit $rc after ${t}s limit)\"}" >"$W/replay/$name.json"
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s" >>"$LOG"
  rm -rf "$W/ext/$name"
}
export -f replay_one
ls "$WDIR"/*.json 2>/dev/null | xargs -r -P "$PAR" -I{} bash -c 'replay_one "$@"' _ {}
echo "done after $(( $(date +%s) - START ))s" >>"$LOG"
