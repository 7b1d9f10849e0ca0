#!/usr/bin/env bash
# Installs every dependency dirigo needs on a fresh Debian machine (Python 3.11, CUDA toolkit in /usr/local/cuda, no GPU).
# Idempotent: re-running it only checks that things are present.
set -euo pipefail
APT_PKGS=(build-essential libz3-dev libgmp-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libfmt-dev libcli11-dev clang)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
# torch==2.13.0 resolves to the CPU build; a bare `torch` would pull the multi-GB CUDA build.
python3 -m pip install -q --disable-pip-version-check \
  "torch==2.13.0" "numpy" "pytest" "nanobind>=2.4" "scikit-build-core>=0.10" "cmake>=3.26" "ninja" "matplotlib"
# einops: the KernelBench level-3 Mamba2 references import it (scripts/op-census.py traces them)
python3 -m pip install -q --disable-pip-version-check "einops==0.8.2"
# NVRTC for `dirigo mutate` (loaded with dlopen; matches the CUDA 13.0 toolkit's nvcc)
python3 -m pip install -q --disable-pip-version-check "nvidia-cuda-nvrtc==13.0.88"
# Triton: compiles our Triton examples to PTX on the CPU (no GPU needed; docs/triton.md). --no-deps: its
# wheel declares no torch pin, and the GPU machine runs the same 3.6.0 beside torch 2.11+cu130.
python3 -m pip install -q --disable-pip-version-check --no-deps "triton==3.6.0"
