#!/usr/bin/env bash
# Fresh-machine set-up, build, and the main job on the bundled example: the paper's running
# example (transposed conv -> min over channels -> sum over height -> GELU -> + bias, with a fused
# CUDA min/sum kernel). The buggy kernel stops its shared-memory loop at s > 32 instead of s >= 32.
# The bundles under examples/running_example/bundle-gpu-* were traced on an NVIDIA H200 (scripts/gpu/sweep.sh);
# checking them needs no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo
echo "== dirigo check examples/running_example/bundle-gpu-buggy   (expected: BUG with a witness)"
./build/dirigo check examples/running_example/bundle-gpu-buggy --budget 20 && rc=0 || rc=$?
[ "$rc" -eq 1 ] || { echo "demo: expected exit status 1 (BUG), got $rc" >&2; exit 1; }
echo
echo "== dirigo check examples/running_example/bundle-gpu-fixed --full   (expected: VERIFIED)"
./build/dirigo check examples/running_example/bundle-gpu-fixed --full --budget 120
