#!/bin/bash
# GPU kill matrix (docs/mutation.md): every substrate and unique device mutant of
# examples/substrates/, prepared on the CPU by `dirigo killmatrix` and exported with
# `python3 python/dirigo/killmatrix_gpu.py export` into .cache/killmatrix/gpu_jobs.tar.gz (carried),
# runs through the CUDA driver API (cuModuleLoadData + cuLaunchKernel) on the same inputs and is
# compared with the same fp64/fp32 references. Writes $1/killmatrix.tar.gz (rows + log), always.
# Time slice: 4 minutes (runner deadline 195 s; a runner killed early leaves killmatrix.jsonl.<i> parts).
# Needs python3 with numpy and cuda-bindings only. Prepare on the CPU:
#   dirigo killmatrix --no-run examples/substrates/*.py
#   python3 python/dirigo/killmatrix_gpu.py export .cache/mutate/killmatrix.sqlite .cache/killmatrix .cache/killmatrix/gpu/jobs
#   tar czf .cache/killmatrix/gpu_jobs.tar.gz -C .cache/killmatrix/gpu jobs
OUT="${1:?usage: killmatrix.sh OUT_DIR}"
mkdir -p "$OUT"
W="$(mktemp -d)"
mkdir -p "$W/res"
LOG="$W/res/log.txt"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1 | head -3
  python3 -c "import numpy, cuda.bindings; print('numpy', numpy.__version__, 'cuda.bindings', cuda.bindings.__version__)" 2>&1
} >> "$LOG"
if tar xzf .cache/killmatrix/gpu_jobs.tar.gz -C "$W" >> "$LOG" 2>&1; then
  timeout -k 5 215 python3 python/dirigo/killmatrix_gpu.py run "$W/jobs" "$W/res/killmatrix.jsonl" \
    --deadline 195 --parallel 4 --hang 5 >> "$LOG" 2>&1
  echo "runner exit $?" >> "$LOG"
else
  echo "no .cache/killmatrix/gpu_jobs.tar.gz" >> "$LOG"
fi
date -u >> "$LOG"
tar czf "$OUT/killmatrix.tar.gz" -C "$W/res" . 2>> "$LOG" || tar czf "$OUT/killmatrix.tar.gz" -C "$W/res" log.txt
rm -rf "$W"
exit 0
