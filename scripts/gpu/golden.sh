#!/bin/bash
# GPU call: the golden OK kernels (tests/golden/cuda/ok_*.cu) run on the real GPU on seeded inputs
# (scripts/gpu/golden.py); their inputs and outputs come back as $1/golden.tar.gz (golden/<stem>.json
# + golden/log.txt), to be unpacked into tests/golden/gpu/ and committed: tests/exec/test_golden_cuda.cpp
# (GoldenCuda.Hardware) compares the concrete interpreter with them.
# Needs nvcc and the driver only (no torch, numpy, Z3 or network); 68 kernels, 8 at a time (nvcc dominates: ~1-2 s each on an idle core), well under 280 s.
# Usage on the GPU machine, from the repo root:  bash scripts/gpu/golden.sh OUT_DIR [--dry-run]
set -u
OUT=${1:?usage: golden.sh OUT_DIR [--dry-run]}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/dirigo-golden.XXXXXX)
mkdir -p "$W/golden"
LOG=$W/golden/log.txt
{ date -u +%FT%TZ; git rev-parse --short HEAD 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -2
  "${NVCC:-/usr/local/cuda/bin/nvcc}" --version 2>&1 | tail -2
} >"$LOG" 2>&1
timeout -k 5 280 python3 scripts/gpu/golden.py "$W/golden" ${2:-} >>"$LOG" 2>&1
echo "golden.py exit $?" >>"$LOG"
date -u +%FT%TZ >>"$LOG"
tar czf "$OUT/golden.tar.gz" -C "$W" golden
tail -3 "$LOG"
