#!/usr/bin/env bash
# Fresh-machine set-up plus the whole test suite: C++ unit and golden tests (ctest),
# Python tests (pytest), and a bounded fuzz run. GPU-only tests are skipped without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# the tests need no benchmarks: leave them out unless asked for
DIRIGO_BUILD_BENCH=${DIRIGO_BUILD_BENCH:-OFF} bash scripts/build.sh
echo "== C++ tests (ctest)"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
echo "== Python tests (pytest)"
python3 -m pytest -q tests/python
if [ -x scripts/fuzz.sh ]; then
  echo "== bounded fuzz run"
  bash scripts/fuzz.sh
fi
