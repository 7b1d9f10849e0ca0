#!/bin/bash
# GPU kill matrix (docs/mutation.md): substrates of examples/substrates/ with their unique device
# mutants (PTX swapped) and host-side launch mutants (the original's PTX with the launch plan derived
# by python/dirigo/killmatrix_host.py), prepared on the CPU by `dirigo killmatrix` and exported with
# `python3 python/dirigo/killmatrix_gpu.py export` into .cache/killmatrix/gpu_jobs.tar.gz (carried).
# Runs through the CUDA driver API (cuModuleLoadData + cuLaunchKernel) on the same inputs and is
# compared with the same fp64/fp32 references. Writes $1/killmatrix.tar.gz (rows + log), always.
# Time slice: 540 s (runner deadline 480 s, 8 substrates in parallel; the export orders substrates
# without GPU rows first, so a deadline cuts the ones measured in an earlier call).
# Needs python3 with numpy and cuda-bindings only. Prepare on the CPU:
#   dirigo killmatrix --no-run examples/substrates/*.py
#   PYTHONPATH=python python3 -m dirigo.killmatrix_host .cache/mutate/killmatrix.sqlite .cache/killmatrix
#   python3 python/dirigo/killmatrix_gpu.py export .cache/mutate/killmatrix.sqlite .cache/killmatrix .cache/killmatrix/gpu/jobs
#   tar czf .cache/killmatrix/gpu_jobs.tar.gz -C .cache/killmatrix/gpu jobs
# CPU dry run: python3 python/dirigo/killmatrix_gpu.py run JOBS OUT.jsonl --dry-run
OUT="${1:?usage: killmatrix.sh OUT_DIR}"
mkdir -p "$OUT"
W="$(mktemp -d)"
mkdir -p "$W/res"
LOG="$W/res/log.txt"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1 | head -3
  nproc
  python3 -c "import numpy, cuda.bindings; print('numpy', numpy.__version__, 'cuda.bindings', cuda.bindings.__version__)" 2>&1
} >> "$LOG"
if tar xzf .cache/killmatrix/gpu_jobs.tar.gz -C "$W" >> "$LOG" 2>&1; then
  DEADLINE="${KM_DEADLINE:-480}"  # override only for a CPU smoke test with a stand-in driver
  timeout -k 5 $((DEADLINE + 25)) python3 python/dirigo/killmatrix_gpu.py run "$W/jobs" "$W/res/killmatrix.jsonl" \
    --deadline "$DEADLINE" --parallel 8 --hang 5 >> "$LOG" 2>&1
  echo "runner exit $?" >> "$LOG"
  # a runner killed by timeout leaves its rows in killmatrix.jsonl.<i> parts: keep them
  for p in "$W"/res/killmatrix.jsonl.[0-9]*; do
    [ -f "$p" ] && case "$p" in *.ready) ;; *) cat "$p" >> "$W/res/killmatrix.jsonl"; rm -f "$p";; esac
  done
  rm -f "$W"/res/*.ready
else
  echo "no .cache/killmatrix/gpu_jobs.tar.gz" >> "$LOG"
fi
date -u >> "$LOG"
tar czf "$OUT/killmatrix.tar.gz" -C "$W/res" . 2>> "$LOG" || tar czf "$OUT/killmatrix.tar.gz" -C "$W/res" log.txt
rm -rf "$W"
exit 0
