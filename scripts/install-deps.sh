#!/usr/bin/env bash
# Installs what dirigo needs on a fresh Debian machine (Python 3.11 with pip, CUDA toolkit in
# /usr/local/cuda, no GPU). Idempotent: re-running it only checks that things are present.
#   --demo   only what `pip install .` and a check of a recorded bundle need (scripts/demo.sh): the C++
#            libraries and the build tools; no torch, no test tools
set -euo pipefail
MODE=${1:-all}
# What the C++ core links and how it builds.
APT_PKGS=(build-essential python3-dev libz3-dev libgmp-dev nlohmann-json3-dev libfmt-dev libcli11-dev)
if [ "$MODE" != "--demo" ]; then
  # Tests, benchmarks, the fuzz run (clang with its sanitizer and libFuzzer runtimes), and the HTML report's rendering test (a headless Chromium).
  APT_PKGS+=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev chromium)
fi
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
PIP=(python3 -m pip install -q --disable-pip-version-check)
"${PIP[@]}" "numpy" "nanobind>=2.4" "scikit-build-core>=0.10" "cmake>=3.26" "ninja"
[ "$MODE" = "--demo" ] && exit 0
# torch==2.13.0 resolves to the CPU build; a bare `torch` would pull the multi-GB CUDA build.
"${PIP[@]}" "torch==2.13.0" "pytest" "matplotlib" "pillow"
# pytest-xdist: scripts/test.sh runs the Python suite on two workers (-n 2; docs/perf.md "The Python test suite")
"${PIP[@]}" "pytest-xdist==3.8.0"
# einops: the KernelBench level-3 Mamba2 references import it (scripts/op-census.py traces them)
"${PIP[@]}" "einops==0.8.2"
# NVRTC for `dirigo mutate` (loaded with dlopen; matches the CUDA 13.0 toolkit's nvcc)
"${PIP[@]}" "nvidia-cuda-nvrtc==13.0.88"
# Triton: compiles our Triton examples to PTX on the CPU (no GPU needed; docs/triton.md). --no-deps: its
# wheel declares no torch pin, and the GPU machine runs the same 3.6.0 beside torch 2.11+cu130.
"${PIP[@]}" --no-deps "triton==3.6.0"
# `dirigo sweep`: dataset sweeps as Ray tasks (python/dirigo/sweep.py)
"${PIP[@]}" "ray==2.60.0"
