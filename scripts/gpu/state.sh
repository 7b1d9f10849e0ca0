#!/bin/bash
# The state stage on the GPU (docs/check.md "State"): for every PAIRS/NNN/ holding ref.py, new.py and
# bundle/manifest.json, `python -m dirigo.state ref.py new.py --bundle bundle --device cuda --json` constructs
# both programs as KernelBench does and, where matched parameters differ, runs both real programs (each with
# its own state) on KernelBench's first trial input: evidence state-replay-gpu. With STATE_ARGS=--observe both
# real programs also run when their state is equal (evidence observed-gpu); a PAIRS/NNN/report.json (the
# check's --json report) is passed as --report (its proven-equal locations). PAR pairs at a time, each
# with its own TORCH_EXTENSIONS_DIR and a timeout cut to what is left. Writes OUTDIR/state.tar.gz
# (state/NNN.json answers, state/NNN.err, state/log.txt), also when parts fail.
# Usage from the repo root:  bash scripts/gpu/state.sh PAIRS OUTDIR [SECONDS]
set -u
PAIRS=${1:?usage: state.sh PAIRS OUTDIR [SECONDS]}; OUT=${2:?}; LIMIT=${3:-540}
PAR=${STATE_PAR:-6}; GPUS=${STATE_GPUS:-1}; START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-state.XXXXXX); mkdir -p "$W/state" "$W/ext"
LOG=$W/state/log.txt
export PYTHONPATH=${STATE_PYTHONPATH:-$PWD/python} PYTHONUNBUFFERED=1 MAX_JOBS=4
finish() { echo "done after $(( $(date +%s) - START ))s" >>"$LOG"; tar czf "$OUT/state.tar.gz" -C "$W" state; }
trap finish EXIT
trap 'echo "killed (TERM) after $(( $(date +%s) - START ))s" >>"$LOG"; exit 143' TERM
{ echo "limit=${LIMIT}s par=$PAR start=$(date -u +%FT%TZ)"; nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())' 2>&1
} >"$LOG" 2>&1
one() {
  local d=$1 k; k=$(basename "$d")
  local left=$(( LIMIT - ($(date +%s) - START) - 10 ))
  [ "$left" -lt 30 ] && { echo "$k: skipped (no time left)" >>"$LOG"; return; }
  local t0=$(date +%s) n=${k//[!0-9]/}
  export CUDA_VISIBLE_DEVICES=$(( 10#${n:-0} % GPUS ))  # STATE_GPUS: pairs spread over the host's GPUs
  local extra=(${STATE_ARGS:-}); [ -f "$d/report.json" ] && extra+=(--report "$d/report.json")
  TORCH_EXTENSIONS_DIR=$W/ext/$k timeout "$left" python3 -m dirigo.state "$d/ref.py" "$d/new.py" --bundle "$d/bundle" \
    --device cuda --json "${extra[@]}" >"$W/state/$k.json" 2>"$W/state/$k.err"
  echo "$k: exit $? after $(( $(date +%s) - t0 ))s" >>"$LOG"
}
export -f one; export W LOG LIMIT START GPUS
ls -d "$PAIRS"/*/ | xargs -P "$PAR" -I{} bash -c 'one {}'
