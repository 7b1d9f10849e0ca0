#!/bin/bash
# `dirigo check REF.py NEW.py` end to end on a GPU host, the way a kernel author runs it: trace on the GPU,
# check on the CPU, replay the witness and observe the real programs on the GPU. The device host has no
# Z3, so the dirigo binary travels with the shared libraries it needs beyond glibc and libstdc++ (KIT/bin/
# dirigo.real, KIT/lib/: libz3, libgmp, libfmt, libsqlite3 copied from this machine). For every
# KIT/pairs/NNN/ holding ref.py, new.py and tol (atol = rtol), PAR at a time, each with its own
# TORCH_EXTENSIONS_DIR: NNN.json (--json report), NNN.err (stderr, each line stamped with the epoch time
# it was written), NNN.rc (start and end epoch, exit code). Writes OUTDIR/cli.tar.gz.
# Usage from the repo root:  bash scripts/gpu/cli.sh KIT OUTDIR [SECONDS]   (KIT holds bin/, lib/, pairs/)
set -u
KIT=$(realpath "${1:?usage: cli.sh KIT OUTDIR [SECONDS]}"); OUT=${2:?}; LIMIT=${3:-540}
PAR=${CLI_PAR:-12}; BUDGET=${CLI_BUDGET:-20}; START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-cli.XXXXXX); mkdir -p "$W/cli" "$W/ext"
LOG=$W/cli/log.txt
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=4
finish() { echo "done after $(( $(date +%s) - START ))s" >>"$LOG"; tar czf "$OUT/cli.tar.gz" -C "$W" cli; }
trap finish EXIT
{ echo "limit=${LIMIT}s par=$PAR budget=$BUDGET start=$(date -u +%FT%TZ)"; nvidia-smi -L 2>&1 | head -2; nproc
  ldd --version 2>&1 | head -1
  LD_LIBRARY_PATH=$KIT/lib "$KIT/bin/dirigo.real" --version 2>&1 | head -2
} >"$LOG" 2>&1
one() {
  local d=$1 k; k=$(basename "$d")
  local left=$(( LIMIT - ($(date +%s) - START) - 10 )) t0
  [ "$left" -lt 30 ] && { echo "$k: skipped (no time left)" >>"$LOG"; return; }
  t0=$EPOCHREALTIME
  local tol; tol=$(cat "$d/tol" 2>/dev/null || echo 0.01)
  ( cd "$d" && TORCH_EXTENSIONS_DIR=$W/ext/$k LD_LIBRARY_PATH=$KIT/lib timeout "$left" \
      "$KIT/bin/dirigo.real" check ref.py new.py --json --budget "$BUDGET" --seed 1 \
      --atol "$tol" --rtol "$tol" --keep-bundle "$W/keep-$k" --witness-out "$W/cli/$k.witness.json" --device "${CLI_DEVICE:-cuda}" ) \
    >"$W/cli/$k.json" 2> >(while IFS= read -r l; do echo "$EPOCHREALTIME $l"; done >"$W/cli/$k.err")
  local rc=$?
  echo "$t0 $EPOCHREALTIME $rc" >"$W/cli/$k.rc"
  echo "$k: exit $rc after $(( $(date +%s) - ${t0%.*} ))s" >>"$LOG"
}
export -f one; export W LOG LIMIT START KIT BUDGET
ls -d "$KIT"/pairs/*/ | xargs -P "$PAR" -I{} bash -c 'one {}'
