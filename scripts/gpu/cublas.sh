#!/bin/bash
# GPU call (cublas helper, issue 7): (1) validates dirigo's cuBLAS equations against real cuBLAS:
# examples/cublas/validate_ext.py builds one extension calling every modeled cuBLAS/cuBLASLt function on
# randomized shapes, transposes, leading dimensions, strides and alpha/beta and saves inputs/outputs as
# fixtures (fixtures/<fn>.npz); a second, shorter pass runs with the cuBLAS shim preloaded so the shim's
# records of the real calls are saved too (fixtures_shim/); (2) traces our own cuBLAS candidates
# examples/cublas/<name>/{ref.py,new.py} into bundles. Everything comes back as $1/cublas.tar.gz.
# (The dev-corpus cuBLAS callers starved at nice 19 in call 2: they have their own job, cublas_corpus.sh.)
# Usage on the GPU machine, from the repo root:  bash scripts/gpu/cublas.sh OUTDIR [SECONDS] [--dry-run]
# --dry-run (no GPU): the numpy reference runs the generated cases and the traces run on the CPU (the CUDA
# candidates then end UNSUPPORTED); for testing the script.
set -u
OUT=$1; LIMIT=${2:-225}; DEVICE=cuda; DRY=
[ "${3:-}" = "--dry-run" ] && DEVICE=cpu && DRY=--dry-run
START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-cublas.XXXXXX)
mkdir -p "$W/fixtures" "$W/fixtures_shim" "$W/bundles" "$W/results" "$W/logs" "$W/ext"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=2
LOG=$W/cublas.log
{ echo "device=$DEVICE limit=${LIMIT}s start=$(date -u +%FT%TZ) commit=$(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L 2>&1 | head -2; nproc
  python3 -c 'import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())'
  timeout 20 python3 examples/cublas/cublas_paths.py
  [ "$DEVICE" = cuda ] && timeout 60 python3 -c 'from dirigo import launch; print("shims:", launch.shim_path())'
  ls /usr/local/cuda/include/cublas_v2.h /usr/local/cuda/lib64/libcublas* 2>&1 | head -5
} >"$LOG" 2>&1

for name in gemm_ok gemm_rowmajor_args gemm_colmajor_out lt_bias_gelu; do
  (
    t0=$(date +%s)
    TORCH_EXTENSIONS_DIR=$W/ext/$name timeout -k 5 $((LIMIT - 10)) python3 -m dirigo.trace \
      examples/cublas/$name/ref.py examples/cublas/$name/new.py --out "$W/bundles/$name" --device $DEVICE --json \
      --timeout $((LIMIT - 25)) >"$W/results/$name.json" 2>"$W/logs/$name.log"
    echo "trace $name rc=$? $(( $(date +%s) - t0 ))s" >>"$W/summary.txt"
  ) &
done
(
  t0=$(date +%s)
  TORCH_EXTENSIONS_DIR=$W/ext/validate timeout -k 5 $((LIMIT - 15)) python3 examples/cublas/validate_ext.py \
    "$W/fixtures" --cases 12 $DRY >"$W/logs/validate.log" 2>&1
  echo "validate rc=$? $(( $(date +%s) - t0 ))s" >>"$W/summary.txt"
  if [ "$DEVICE" = cuda ]; then
    SHIM=$(timeout 30 python3 -c 'from dirigo import launch; print(launch.build_shim(source=launch.CUBLAS_SHIM_SOURCE))')
    left=$(( LIMIT - 10 - ($(date +%s) - START) ))
    [ $left -gt 45 ] && left=45
    if [ -n "$SHIM" ] && [ $left -gt 20 ]; then
      TORCH_EXTENSIONS_DIR=$W/ext/validate LD_PRELOAD=$SHIM timeout -k 3 $left python3 examples/cublas/validate_ext.py \
        "$W/fixtures_shim" --cases 3 --seed 11 >"$W/logs/validate_shim.log" 2>&1
      echo "validate_shim rc=$? left=${left}s" >>"$W/summary.txt"
    fi
  fi
) &
wait
echo "all done after $(( $(date +%s) - START ))s" >>"$LOG"
sort "$W/summary.txt" >>"$LOG"
rm -rf "$W/ext"
tar czf "$OUT/cublas.tar.gz" -C "$W" fixtures fixtures_shim bundles results logs summary.txt cublas.log
ls -la "$OUT"; tail -20 "$LOG"
