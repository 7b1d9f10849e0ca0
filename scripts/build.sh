#!/usr/bin/env bash
# Configures and builds the C++ core, the CLI, the tests, the benchmarks and the in-tree Python
# extension into build/ (Release). The options are passed every time: a build/ configured otherwise
# (fewer targets) is switched back. DIRIGO_BUILD_BENCH=OFF leaves the benchmarks out; targets given as
# arguments build only those (scripts/test.sh: `dirigo _core`, what pytest runs).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -DDIRIGO_BUILD_TESTS=ON -DDIRIGO_BUILD_BENCH=${DIRIGO_BUILD_BENCH:-ON} -DDIRIGO_BUILD_PYTHON=ON \
  -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${1:+--target "$@"}
