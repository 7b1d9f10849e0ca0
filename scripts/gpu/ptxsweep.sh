#!/bin/bash
# Compile the dev corpus's CUDA units to PTX on the device machine's many cores (nvcc only, no GPU use):
# the jobs are what `scripts/ptx-coverage.py --every 1 --emit-jobs .cache/ptx-jobs` left uncached here
# (<key>.cu + <key>.flags); writes $1/ptxsweep.tar.gz with <key>.ptx or <key>.err for each, which
# `scripts/ptx-coverage.py --import-dir DIR` copies into .cache/ptx.
# Usage from the repo root:  bash scripts/gpu/ptxsweep.sh OUTDIR
set -u
OUT=${1:?usage: ptxsweep.sh OUTDIR}; JOBS=.cache/ptx-jobs; STUB=$PWD/tests/ptx/stub
W=$(mktemp -d /tmp/ptxsweep.XXXXXX)
START=$(date +%s)
/usr/local/cuda/bin/nvcc --version | tail -1 >"$W/log.txt"
compile_one() {  # key: the same command line scripts/ptx-coverage.py's compile_ptx runs
  local key=$1 jobs=$2 stub=$3 w=$4
  mapfile -t flags <"$jobs/$key.flags"
  if timeout 180 /usr/local/cuda/bin/nvcc -ptx "${flags[@]}" -I "$stub" "$jobs/$key.cu" -o "$w/$key.ptx.tmp" 2>"$w/$key.stderr"; then
    mv "$w/$key.ptx.tmp" "$w/$key.ptx"; rm -f "$w/$key.stderr"
  else
    [ $? -eq 124 ] && echo "nvcc timeout after 180s" >"$w/$key.stderr"
    mv "$w/$key.stderr" "$w/$key.err"; rm -f "$w/$key.ptx.tmp"
  fi
}
export -f compile_one
ls "$JOBS" | sed -n 's/\.cu$//p' | xargs -P "$(nproc)" -I{} bash -c 'compile_one "$@"' _ {} "$JOBS" "$STUB" "$W"
echo "jobs=$(ls $JOBS/*.cu | wc -l) ptx=$(ls $W/*.ptx 2>/dev/null | wc -l) err=$(ls $W/*.err 2>/dev/null | wc -l) seconds=$(( $(date +%s) - START )) nproc=$(nproc)" >>"$W/log.txt"
cat "$W/log.txt"
(cd "$W" && tar czf "$OUT/ptxsweep.tar.gz" log.txt $(ls | grep -E '\.(ptx|err)$'))
