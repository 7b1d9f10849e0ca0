#!/bin/bash
# GPU call (later): trace the dev-corpus level-2 programs that call cuBLAS (.cache/cublas/pairs, carried;
# made by the snippet in docs/blas.md) at normal priority, without data. Comes back as
# $1/cublas_corpus.tar.gz (corpus-derived: it stays in .cache). Check on the CPU afterwards with
# `python3 -c "import dirigo._core as c; print(c.check_bundle(DIR))"` per bundle (docs/blas.md).
# Usage: bash scripts/gpu/cublas_corpus.sh OUTDIR [SECONDS] [--dry-run]
set -u
OUT=$1; LIMIT=${2:-225}; DEVICE=cuda
[ "${3:-}" = "--dry-run" ] && DEVICE=cpu
START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-cublas-corpus.XXXXXX)
mkdir -p "$W/corpus" "$W/ext"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=2
cp .cache/cublas/pairs/pairs.json "$W/corpus/" 2>/dev/null
for d in .cache/cublas/pairs/*/; do
  d=${d%/}; name=$(basename "$d")
  (
    t0=$(date +%s)
    TORCH_EXTENSIONS_DIR=$W/ext/$name timeout -k 5 $((LIMIT - 10)) python3 -m dirigo.trace "$d/ref.py" "$d/new.py" \
      --out "$W/corpus/$name" --device $DEVICE --json --no-data --timeout $((LIMIT - 25)) \
      >"$W/corpus/$name.json" 2>"$W/corpus/$name.log"
    echo "corpus $name rc=$? $(( $(date +%s) - t0 ))s" >>"$W/summary.txt"
  ) &
done
wait
echo "all done after $(( $(date +%s) - START ))s" >>"$W/summary.txt"
rm -rf "$W/ext"
tar czf "$OUT/cublas_corpus.tar.gz" -C "$W" corpus summary.txt
ls -la "$OUT"; sort "$W/summary.txt"
