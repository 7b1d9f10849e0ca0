#!/usr/bin/env bash
# Fresh-machine set-up plus the whole test suite. The Release build gives pytest its `dirigo` binary and
# `_core` extension (only those targets); the C++ unit and golden tests (ctest), every committed bundle and a
# bounded fuzz run then run in the AddressSanitizer + UndefinedBehaviorSanitizer build (scripts/sanitize.sh),
# so the suite is compiled once. GPU-only tests are skipped without a GPU. `bash scripts/build.sh` and
# `ctest --test-dir build` run the C++ suite on the Release build too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
DIRIGO_BUILD_BENCH=${DIRIGO_BUILD_BENCH:-OFF} bash scripts/build.sh dirigo _core
echo "== Python tests (pytest, two workers: pytest-xdist)"
python3 -m pytest -q -n 2 tests/python
echo "== ASan+UBSan: C++ unit and golden tests, every committed bundle"
bash scripts/sanitize.sh
echo "== bounded fuzz run (the same sanitizer build)"
bash scripts/fuzz.sh
