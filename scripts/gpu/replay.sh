#!/bin/bash
# GPU replay of dirigo witnesses (docs/check.md, docs/evaluation.md): every witness file in $WITNESS_DIR
# (dirigo-witness JSON written by `dirigo check --witness-out`, naming the corpus program copies under
# .cache/sweep*/) is replayed on the GPU with `python -m dirigo.replay`. Witnesses of the same pair of
# programs are replayed by ONE process with one load (one extension build) of the programs; several such
# processes run at once, each with its own TORCH_EXTENSIONS_DIR and a timeout cut to what is left of the
# slice. Writes $1/replay.tar.gz: replay/<witness name>.json (the dirigo-replay answer), replay/<group>.err
# (the programs' stderr), replay/summary.json, replay/log.txt — also when parts fail.
# Usage from the repo root:  bash scripts/gpu/replay.sh OUTDIR [SECONDS] [--dry-run]
# --dry-run (no GPU): replays on the CPU (CUDA programs then answer "unsupported"); for testing the script.
set -u
OUT=${1:?usage: replay.sh OUTDIR [SECONDS] [--dry-run]}; LIMIT=${2:-500}; DEVICE=cuda  # a TERM of the call packs what is done
[ "${3:-}" = "--dry-run" ] && DEVICE=cpu
PAR=${REPLAY_PAR:-8}          # concurrent program pairs (each may compile an extension: ~60-100 s of one core)
PER=${REPLAY_TIMEOUT:-300}    # most seconds for one pair's process (all its witnesses)
WDIR=${WITNESS_DIR:-.cache/replay-b/witnesses}
START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-replay.XXXXXX)
mkdir -p "$W/replay" "$W/ext" "$W/groups"
LOG=$W/replay/log.txt
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=2 START LIMIT PER W DEVICE LOG
finish() {  # always leave a tarball, whatever happened
  python3 - "$W/replay" "$W/groups" <<'PY' >>"$LOG" 2>&1
import json, os, sys
d, groups = sys.argv[1], sys.argv[2]
rows = {}
for g in sorted(os.listdir(groups)):  # every witness gets an answer, also those whose process was killed
    for path in open(os.path.join(groups, g)).read().split():
        name = os.path.basename(path)[:-5]
        f = os.path.join(d, name + ".json")
        try:
            rows[name] = json.load(open(f))
        except Exception:
            rows[name] = {"status": "error", "message": f"no answer: the replay of group {g} ended before this witness"}
            json.dump(rows[name], open(f, "w"))
count = {}
for r in rows.values():
    k = r.get("status", "?") + ("/reproduced" if r.get("exceeds") else "/not-reproduced" if r.get("status") == "replayed" else "")
    count[k] = count.get(k, 0) + 1
json.dump({"counts": count, "replays": {k: {x: v.get(x) for x in ("status", "exceeds", "reference", "candidate",
           "difference", "allowed", "evidence", "message", "seconds", "load_seconds", "shared_by")}
           for k, v in rows.items()}}, open(os.path.join(d, "summary.json"), "w"), indent=1)
print("summary:", count)
PY
  echo "done after $(( $(date +%s) - START ))s" >>"$LOG"
  tar czf "$OUT/replay.tar.gz" -C "$W" replay
}
trap finish EXIT
trap 'echo "killed (TERM) after $(( $(date +%s) - START ))s" >>"$LOG"; exit 143' TERM  # the call's timeout: still pack
{ echo "device=$DEVICE limit=${LIMIT}s par=$PAR per=${PER}s start=$(date -u +%FT%TZ) commit=$(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())' 2>&1
  echo "witnesses: $(ls $WDIR/*.json 2>/dev/null | wc -l) in $WDIR"
} >"$LOG" 2>&1
# one line per pair of programs: the witness files that replay them
n=0
timeout 60 python3 -m dirigo.replay --list-groups $(ls "$WDIR"/*.json 2>/dev/null) 2>>"$LOG" | while read -r line; do
  n=$((n + 1)); echo "$line" >"$W/groups/g$(printf %03d $n)"
done
echo "groups: $(ls $W/groups | wc -l)" >>"$LOG"

replay_group() {  # $1 = group file; skipped when too little of the slice is left to finish it
  g=$(basename "$1")
  left=$(( START + LIMIT - 20 - $(date +%s) ))
  if [ $left -lt 30 ]; then echo "$g skipped: ${left}s left" >>"$LOG"; return; fi
  t=$(( left < PER ? left : PER ))
  t0=$(date +%s)
  TORCH_EXTENSIONS_DIR=$W/ext/$g timeout -k 5 $t python3 -m dirigo.replay $(cat "$1") --json --device "$DEVICE" \
    --out-dir "$W/replay" >/dev/null 2>"$W/replay/$g.err"
  echo "$g rc=$? $(( $(date +%s) - t0 ))s: $(for f in $(cat "$1"); do basename $f; done | tr '\n' ' ')" >>"$LOG"
  rm -rf "$W/ext/$g"
}
export -f replay_group
# in the background, so that a TERM (the call's own timeout) runs the trap at once
ls "$W"/groups/* 2>/dev/null | xargs -r -P "$PAR" -I{} bash -c 'replay_group "$@"' _ {} &
wait $!
