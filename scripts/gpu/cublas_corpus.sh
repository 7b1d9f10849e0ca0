#!/bin/bash
# GPU call: trace the dev-corpus level-2 programs that call cuBLAS (.cache/cublas/pairs, carried; their
# bundles stay in .cache, git-ignored) with the cuBLAS shim, no data. Usage: bash scripts/gpu/cublas_corpus.sh OUT [SECONDS]
set -u
OUT=$1; LIMIT=${2:-360}
W=$(mktemp -d /tmp/dirigo-cublas-corpus.XXXXXX)
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
python3 -c 'from dirigo import launch; print("shims:", launch.shim_path())' >"$W/summary.txt" 2>&1
cp .cache/cublas/pairs/pairs.json "$W/" 2>/dev/null
for d in .cache/cublas/pairs/*/; do
  d=${d%/}; name=$(basename "$d")
  ( t0=$(date +%s)
    TORCH_EXTENSIONS_DIR=$W/ext/$name timeout -k 5 $((LIMIT - 25)) python3 -m dirigo.trace "$d/ref.py" "$d/new.py" \
      --out "$W/bundles/$name" --device cuda --json --no-data --timeout $((LIMIT - 40)) >"$W/$name.json" 2>"$W/$name.log"
    echo "$name rc=$? $(( $(date +%s) - t0 ))s" >>"$W/summary.txt" ) &
done
wait
rm -rf "$W/ext"
tar czf "$OUT/cublas_corpus.tar.gz" -C "$W" .
