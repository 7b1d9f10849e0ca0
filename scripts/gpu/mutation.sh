#!/bin/bash
# GPU call for issue 20 (docs/mutation.md "Step by step"): for every substrate of the carried store,
# compile its mutants (dirigo mutate with the carried binary and the host's NVRTC) when not done on the
# CPU, trace its bundle (new.py against ref.py), and run its kill matrix by bundle replay (ATen ops
# through torch, launches through the CUDA driver API with each mutant's PTX). Needs torch (CUDA),
# cuda.bindings and numpy; the dirigo binary travels in the carry with its libraries (no Z3 there).
# Carried: .cache/mutation/gpu_carry.tar.gz (< 64 MiB), made on the CPU by
#   PYTHONPATH=python python3 -m dirigo.bundle_km pack .cache/mutation/km.sqlite .cache/mutation \
#     .cache/mutation/gpu_carry.tar.gz --kit build/dirigo
# Writes $1/mutation.tar.gz: km.sqlite (the store after compiling, without PTX), rows.jsonl (runs, source
# = gpu), bundles/<name>/, logs/ and log.txt. Always exits 0. MUT_LIMIT seconds in all (default 480):
# compile and trace run side by side until MUT_PHASE1_SHARE % of it (default 50; 0: only run what the
# carry holds compiled and traced), the kill matrix in the rest.
# MUT_PHASE=trace (no store needed): carry .cache/mutation/substrates/ instead and trace every substrate
# there that has no bundle yet (TRACE_JOBS at a time, the C++ part built against torch's precompiled
# header where the program passes no C++ flags of its own); writes $1/bundles.tar.gz (NAME/bundle/...) and
# $1/trace-log.txt, to be unpacked into .cache/mutation/substrates/ here.
# Back on the CPU:
#   mkdir -p .cache/mutation/gpu_out && tar xzf mutation.tar.gz -C .cache/mutation/gpu_out
#   PYTHONPATH=python python3 -m dirigo.bundle_km unpack-gpu .cache/mutation/km.sqlite .cache/mutation/gpu_out
OUT="${1:?usage: mutation.sh OUT_DIR}"
LIMIT=${MUT_LIMIT:-480}
START=$(date +%s)
mkdir -p "$OUT"
W="$(mktemp -d /tmp/dirigo-mutation.XXXXXX)"
R="$W/res"
mkdir -p "$R/bundles" "$R/logs" "$R/rows"
LOG="$R/log.txt"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-2}
DB=${MUT_DB:-.cache/mutation/km.sqlite}; WORK=${MUT_WORK:-.cache/mutation}
finish() {
  echo "finished after $(( $(date +%s) - START ))s" >> "$LOG"
  cat "$R"/rows/*.jsonl > "$R/rows.jsonl" 2>/dev/null
  rm -rf "$R/rows"
  [ -f "$W/carry/$DB" ] && python3 -c "import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)" \
    "$W/carry/$DB" "$R/km.sqlite" >> "$LOG" 2>&1
  tar czf "$OUT/mutation.tar.gz" -C "$R" . 2>> "$LOG" || tar czf "$OUT/mutation.tar.gz" -C "$R" log.txt
  ls -la "$OUT"
}
trap finish EXIT
{
  date -u; nvidia-smi -L 2>&1 | head -2; nproc; ldd --version 2>&1 | head -1
  python3 -c 'import torch, numpy, cuda.bindings; print(torch.__version__, torch.cuda.is_available(), numpy.__version__)' 2>&1
} >> "$LOG" 2>&1
# trace every substrate directory that has no bundle yet: first those without C++ flags of their own, against
# one precompiled torch/extension.h (built once here: a build with other flags would rebuild or remove it),
# then the others; a failed PCH trace is tried again without it
trace_dir() {
  d=$1; n=$(basename "$d"); [ -f "$d/bundle/manifest.json" ] && return 0
  t=$(( TRACE_END - $(date +%s) )); [ $t -lt 40 ] && { echo "$n: no time left to trace"; return 0; }
  TORCH_EXTENSIONS_DIR=$W/ext/$n$2 timeout -k 5 $t python3 -m dirigo.trace "$d/ref.py" "$d/new.py" --out "$d/bundle" \
    --device cuda --no-data --json --timeout $(( t - 5 )) > "$R/logs/$n.trace.json" 2> "$R/logs/$n.trace.log"
  echo "trace $n rc=$? pch=${DIRIGO_EXTENSION_PCH:-0} $(( $(date +%s) - START ))s"
  return 0
}
export -f trace_dir
if [ "${MUT_PHASE:-}" = trace ]; then
  export TRACE_END=$(( START + LIMIT - 25 )) W R START
  S=.cache/mutation/substrates
  ls -d $S/*/ 2>/dev/null | sed 's:/$::' > "$W/all.txt"
  : > "$W/pch.txt"; : > "$W/plain.txt"
  while read -r d; do
    if grep -Eq 'extra_cflags\s*=\s*\[\s*["'"'"'][^"'"'"']|extra_include_paths\s*=\s*\[\s*["'"'"']|extra_cflags\s*=\s*[A-Za-z_]' "$d/new.py"
    then echo "$d" >> "$W/plain.txt"; else echo "$d" >> "$W/pch.txt"; fi
  done < "$W/all.txt"
  echo "substrates: $(wc -l < "$W/all.txt") ($(wc -l < "$W/pch.txt") with the precompiled header)" >> "$LOG"
  python3 -c 'from torch.utils.cpp_extension import _check_and_build_extension_h_precompiler_headers as b; b(None, None)' \
    >> "$LOG" 2>&1 && echo "precompiled header built after $(( $(date +%s) - START ))s" >> "$LOG"
  DIRIGO_EXTENSION_PCH=1 xargs -P ${TRACE_JOBS:-16} -I{} bash -c 'trace_dir {}' < "$W/pch.txt" >> "$LOG" 2>&1
  cat "$W/plain.txt" "$W/pch.txt" | xargs -P ${TRACE_JOBS:-16} -I{} bash -c 'trace_dir {} .plain' >> "$LOG" 2>&1
  (cd $S && ls -d */bundle 2>/dev/null | xargs -r tar czf "$OUT/bundles.tar.gz")
  echo "bundles: $(ls -d $S/*/bundle/manifest.json 2>/dev/null | wc -l) of $(wc -l < "$W/all.txt")" >> "$LOG"
  tar czf "$OUT/trace-logs.tar.gz" -C "$R/logs" . 2>/dev/null
  cp "$LOG" "$OUT/trace-log.txt"
  trap - EXIT
  exit 0
fi

# the replay itself, once: our traced LayerNorm through the driver API against its traced output
timeout 120 python3 -m dirigo.bundle_run examples/execute_bugs/layernorm_correct/bundle --device cuda >> "$LOG" 2>&1
if ! tar xzf .cache/mutation/gpu_carry.tar.gz -C "$W" >> "$LOG" 2>&1; then
  echo "no .cache/mutation/gpu_carry.tar.gz" >> "$LOG"; exit 0
fi
cd "$W/carry" || exit 0
KIT=$W/carry/kit
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bin/dirigo.real "$@"\n' "$KIT" "$KIT" > "$KIT/dirigo" 2>/dev/null && chmod +x "$KIT/dirigo"
if "$KIT/dirigo" mutate --list-rules > /dev/null 2>> "$LOG"; then HAVE_KIT=1; else HAVE_KIT=0; fi
echo "dirigo binary usable here: $HAVE_KIT" >> "$LOG"
python3 -m dirigo.bundle_km list "$DB" > "$W/names.txt" 2>> "$LOG"
echo "substrates: $(wc -l < "$W/names.txt")" >> "$LOG"
PHASE1_END=$(( START + LIMIT * ${MUT_PHASE1_SHARE:-50} / 100 ))
export W R DB WORK KIT START LIMIT PHASE1_END

# 1a. compile: substrates whose mutants were only generated on the CPU, one at a time (one store writer)
compile_all() {
  while read -r n d; do
    [ $(( PHASE1_END - $(date +%s) )) -lt 10 ] && { echo "compile: out of time before $n"; break; }
    [ -f "$WORK/mutants/$n/original.ptx" ] && continue
    timeout 120 python3 -m dirigo.bundle_km prep "$DB" "$WORK" "$d" --dirigo "$KIT/dirigo" -j 6 >> "$R/logs/$n.prep.log" 2>&1
    echo "compiled $n rc=$?"
  done < "$W/names.txt"
}
[ $HAVE_KIT = 1 ] && compile_all >> "$LOG" 2>&1 &
CPID=$!

# 1b. trace: new.py against ref.py on the GPU, 10 at a time, each within its own limit
trace_one() {
  n=$1; d=$(grep "^$n " "$W/names.txt" | cut -d' ' -f2)
  [ -f "$d/bundle/manifest.json" ] && return 0
  t=$(( PHASE1_END - $(date +%s) )); [ $t -lt 30 ] && { echo "$n: no time left to trace" >> "$R/logs/$n.trace.log"; return 0; }
  TORCH_EXTENSIONS_DIR=$W/ext/$n timeout -k 5 $t python3 -m dirigo.trace "$d/ref.py" "$d/new.py" --out "$d/bundle" \
    --device cuda --no-data --json --timeout $(( t - 5 )) > "$R/logs/$n.trace.json" 2> "$R/logs/$n.trace.log"
  echo "trace $n rc=$?" >> "$R/logs/$n.trace.log"
  [ -f "$d/bundle/manifest.json" ] && mkdir -p "$R/bundles/$n" && cp -r "$d/bundle/." "$R/bundles/$n/"
  return 0
}
export -f trace_one
cut -d' ' -f1 "$W/names.txt" | xargs -P ${TRACE_JOBS:-10} -I{} bash -c 'trace_one {}' >> "$LOG" 2>&1
wait $CPID 2>/dev/null
echo "phase 1 after $(( $(date +%s) - START ))s: $(ls "$R/bundles" | wc -l) bundles" >> "$LOG"

# 2. the kill matrix: one runner per substrate (8 at a time); a runner that exits after a CUDA error
#    (exit 3: the context is lost) or hangs (no new row for HANG seconds) is restarted and resumes
run_one() {
  n=$1; rows=$R/rows/$n.jsonl; HANG=${HANG:-30}; d=$(grep "^$n " "$W/names.txt" | cut -d' ' -f2)
  [ -f "$d/bundle/manifest.json" ] && [ -f "$WORK/mutants/$n/original.ptx" ] || return 0
  for attempt in $(seq 1 40); do
    t=$(( START + LIMIT - 15 - $(date +%s) )); [ $t -lt 10 ] && return 0
    python3 -m dirigo.bundle_km run "$DB" "$WORK" --device cuda --only "$n" --deadline $(( t - 5 )) --jsonl "$rows" \
      >> "$R/logs/$n.run.log" 2>&1 &
    pid=$!; last=0; idle=0
    while kill -0 $pid 2>/dev/null; do
      sleep 2; size=$(stat -c %s "$rows" 2>/dev/null || echo 0)
      if [ "$size" = "$last" ]; then idle=$((idle + 2)); else idle=0; last=$size; fi
      [ $idle -ge $HANG ] && { kill -9 $pid; echo "$n: killed after ${HANG}s without a row" >> "$R/logs/$n.run.log"; }
      [ $(( START + LIMIT - 10 - $(date +%s) )) -lt 0 ] && kill -9 $pid
    done
    wait $pid; rc=$?
    [ $rc -eq 0 ] && return 0
  done
}
export -f run_one
cut -d' ' -f1 "$W/names.txt" | xargs -P ${RUN_JOBS:-8} -I{} bash -c 'run_one {}' >> "$LOG" 2>&1
echo "rows: $(cat "$R"/rows/*.jsonl 2>/dev/null | grep -vc '"start": true')" >> "$LOG"
exit 0
