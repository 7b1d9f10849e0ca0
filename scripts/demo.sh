#!/usr/bin/env bash
# Fresh machine to the first verdict: installs the C++ libraries and build tools only, `pip install .`
# (builds the C++ core once: the `dirigo` command and the Python package, no tests or benchmarks),
# then checks the paper's running example (transposed conv -> min over channels -> sum over height ->
# GELU -> + bias, with a fused CUDA min/sum kernel whose shared-memory loop stops at s > 32 instead of
# s >= 32). The bundles under examples/running_example/bundle-gpu-* were traced on an NVIDIA H200;
# checking them needs no GPU and no torch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --demo
echo "== pip install .   (the dirigo command and package; tests build in scripts/test.sh)"
python3 -m pip install -q --disable-pip-version-check .
# Where pip put the console entry point (a venv's bin/, or the interpreter's scripts directory).
DIRIGO="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/dirigo"
echo
echo "== dirigo check examples/running_example/bundle-gpu-buggy   (expected: BUG with a witness)"
"$DIRIGO" check examples/running_example/bundle-gpu-buggy --budget 20 && rc=0 || rc=$?
[ "$rc" -eq 1 ] || { echo "demo: expected exit status 1 (BUG), got $rc" >&2; exit 1; }
echo
echo "== dirigo check examples/running_example/bundle-gpu-fixed --full   (expected: VERIFIED)"
"$DIRIGO" check examples/running_example/bundle-gpu-fixed --full --budget 120
