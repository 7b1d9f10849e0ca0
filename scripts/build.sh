#!/usr/bin/env bash
# Configures and builds the C++ core, the CLI, the tests and the benchmarks into build/ (Release).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
