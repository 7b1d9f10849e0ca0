#!/bin/bash
# GPU call: `dirigo sweep --device cuda` on a local Ray over our own example pairs (examples/sweep-ours.jsonl:
# CUDA, Triton and pure-PyTorch candidates): tracing and the replay/state stage as GPU tasks, checks as CPU
# tasks. The host has no Z3 and no Ray: the C++ core is built here for this Python from the Debian packages
# in the kit (scripts/gpu/raysweep-kit.sh), Ray comes from the kit's site312.tar.xz. Writes
# OUT/raysweep.tar.gz (results.jsonl, the summary table, the log). Usage from the repo root:
#   bash scripts/gpu/raysweep.sh OUT [SECONDS]    (carry .carry/kit)
set -u
OUT=${1:?usage: raysweep.sh OUT [SECONDS]}; LIMIT=${2:-480}; KIT=$PWD/.carry/kit; START=$(date +%s)
W=$(mktemp -d /tmp/dirigo-raysweep.XXXXXX); mkdir -p "$W/site" "$W/root" "$W/res"
LOG=$W/res/log.txt
finish() { echo "done after $(( $(date +%s) - START )) s" >>"$LOG"; tar czf "$OUT/raysweep.tar.gz" -C "$W" res; tail -40 "$LOG"; }
trap finish EXIT
{ date -u +%FT%TZ; nvidia-smi -L; nproc; python3 --version; } >"$LOG" 2>&1
tar xJf "$KIT/site312.tar.xz" -C "$W/site"
for f in "$KIT"/debs/*.deb; do dpkg -x "$f" "$W/root"; done
LIB=$W/root/usr/lib/x86_64-linux-gnu
# gmp.h sits in Debian's multiarch include folder, which the compiler searches only under /usr
export CPATH=$W/root/usr/include:$W/root/usr/include/x86_64-linux-gnu LIBRARY_PATH=$LIB
# At run time only the libraries the host lacks: the kit's libgmp/libsqlite3 in front of the host's would
# replace the ones its Python and torch were built with.
mkdir -p "$W/rt"; for l in libz3.so.4 libfmt.so.9 libgmpxx.so.4; do cp -L "$LIB/$l" "$W/rt/"; done
export PYTHONPATH=$W/site:$PWD/python PYTHONUNBUFFERED=1 MAX_JOBS=4
t0=$(date +%s)
{ cmake -S . -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDIRIGO_BUILD_TESTS=OFF -DDIRIGO_BUILD_BENCH=OFF \
    -DDIRIGO_BUILD_PYTHON=ON -DCMAKE_PREFIX_PATH="$W/root/usr" -DCMAKE_INCLUDE_PATH="$W/root/usr/include" \
    -DCMAKE_LIBRARY_PATH="$LIB" -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" \
  && cmake --build "$W/build" -j "$(nproc)"; } >"$W/res/build.txt" 2>&1 || { echo "build failed"; tail -30 "$W/res/build.txt"; } >>"$LOG"
echo "core built in $(( $(date +%s) - t0 )) s" >>"$LOG"
export LD_LIBRARY_PATH=$W/rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -X faulthandler -c 'import dirigo, dirigo._core; print("dirigo", dirigo.__version__)' >>"$LOG" 2>&1
EXECUTOR=ray
python3 -X faulthandler -c 'import ray; print("ray", ray.__version__)' >>"$LOG" 2>&1 || EXECUTOR=local
"$W/build/dirigo" --version >>"$LOG" 2>&1
left=$(( LIMIT - ($(date +%s) - START) - 20 ))
timeout -k 10 "$left" python3 -m dirigo.sweep examples/sweep-ours.jsonl --out "$W/res/results.jsonl" --device cuda \
  --budget 20 --trace-timeout 240 --child-timeout 120 --executor $EXECUTOR >"$W/res/summary.txt" 2>>"$LOG"
echo "sweep (executor $EXECUTOR) exit $?" >>"$LOG"
cat "$W/res/summary.txt" >>"$LOG"
