#!/bin/bash
# Issue 17's verdict pairs traced on a GPU: every tests/python/verdict_pairs/gpu/*.py candidate (its first line
# names the expected verdict) against its reference, and the CPU pairs once more with --device cuda (the CUDA
# caching allocator makes stale torch.empty outputs and call-history hacks look right). For each pair
# `python -m dirigo.trace REF NEW --out B --device cuda --json`: the bundle (when the trace gave one) and the
# tracer's JSON answer. No Z3 or dirigo binary needed: the bundles are checked afterwards on the CPU.
# Writes OUTDIR/verdicts.tar.gz (verdicts/<set>/<name>/{bundle/,trace.json,trace.err}, verdicts/log.txt), also
# when parts fail. Usage from the repo root:  bash scripts/gpu/verdicts.sh OUTDIR [SECONDS]
set -u
OUT=${1:?usage: verdicts.sh OUTDIR [SECONDS]}; LIMIT=${2:-540}; PAR=${VERDICTS_PAR:-4}; START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-verdicts.XXXXXX); mkdir -p "$W/verdicts" "$W/ext"
LOG=$W/verdicts/log.txt
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=4
finish() { echo "done after $(( $(date +%s) - START ))s" >>"$LOG"; tar czf "$OUT/verdicts.tar.gz" -C "$W" verdicts; }
trap finish EXIT
trap 'echo "killed (TERM) after $(( $(date +%s) - START ))s" >>"$LOG"; exit 143' TERM
{ echo "limit=${LIMIT}s par=$PAR start=$(date -u +%FT%TZ)"; nvidia-smi -L 2>&1 | head -2
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())' 2>&1
} >"$LOG" 2>&1
one() {  # SET NEW: traces NEW against the reference its second line names
  local set=$1 new=$2 k; k=$(basename "$new" .py)
  local ref; ref=$(dirname "$new")/$(sed -n 's/^# reference: //p' "$new" | head -1)
  local left=$(( LIMIT - ($(date +%s) - START) - 15 ))
  [ "$left" -lt 30 ] && { echo "$set/$k: skipped (no time left)" >>"$LOG"; return; }
  local d=$W/verdicts/$set/$k t0=$(date +%s); mkdir -p "$d"
  TORCH_EXTENSIONS_DIR=$W/ext/$set-$k timeout "$left" python3 -m dirigo.trace "$ref" "$new" --out "$d/bundle" \
    --device cuda --timeout 360 --json >"$d/trace.json" 2>"$d/trace.err"
  echo "$set/$k: exit $? after $(( $(date +%s) - t0 ))s; expected: $(head -1 "$new" | cut -c3-)" >>"$LOG"
}
export -f one; export W LOG LIMIT START
{ for f in tests/python/verdict_pairs/gpu/*.py; do head -1 "$f" | grep -q '^# expect:' && echo "gpu $f"; done
  for f in tests/python/verdict_pairs/*.py; do head -1 "$f" | grep -q '^# expect:' && echo "cpu-pairs-on-gpu $f"; done
} | grep -v 'internal_error\|hangs' | xargs -P "$PAR" -L 1 bash -c 'one "$0" "$1"'
