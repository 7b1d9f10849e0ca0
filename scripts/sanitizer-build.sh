#!/usr/bin/env bash
# The one AddressSanitizer + UndefinedBehaviorSanitizer build (clang), in build-san/: every core library,
# the CLI, the C++ tests and the libFuzzer targets, all instrumented alike (plus libFuzzer's coverage
# hooks, inert outside a fuzz target), so scripts/sanitize.sh and scripts/fuzz.sh share one compile.
# -O1 with line tables only: sanitizer reports keep file:line without the compile cost of full debug info.
#   bash scripts/sanitizer-build.sh [TARGET ...]   (no target: everything)
#   SAN_BUILD_DIR=dir  JOBS=N
set -euo pipefail
cd "$(dirname "$0")/.."
B=${SAN_BUILD_DIR:-build-san}
if ! command -v clang++ >/dev/null; then
  echo "sanitizer-build.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
  -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DDIRIGO_FUZZ=ON -DDIRIGO_BUILD_TESTS=ON -DDIRIGO_BUILD_BENCH=OFF -DDIRIGO_BUILD_PYTHON=OFF >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$B" -j "${JOBS:-$(nproc)}" --target "$@"
else
  cmake --build "$B" -j "${JOBS:-$(nproc)}"
fi
