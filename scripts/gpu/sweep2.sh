#!/bin/bash
# The rest of the picked corpus pairs (those an earlier call did not reach): bash scripts/gpu/sweep2.sh OUT
set -u
OUT=$1
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
python3 -c 'from dirigo import launch; print("shim:", launch.build_shim())'
timeout ${SWEEP_LIMIT:-460} python3 scripts/trace-sweep.py run --jobs ${SWEEP_JOBS:-10} --timeout $(( ${SWEEP_LIMIT:-460} - 30 )) \
  --skip .cache/sweep/results-call1.json --results .cache/sweep/results2.json
tar czf "$OUT/sweep2.tar.gz" -C .cache/sweep bundles results2.json
