#!/usr/bin/env bash
# Bounded fuzz run: builds every fuzz/fuzz_*.cpp in the sanitizer build (scripts/sanitizer-build.sh,
# build-san/: clang, -fsanitize=fuzzer,address,undefined) and runs each for FUZZ_SECONDS (default 60)
# from its seeds in fuzz/seeds/<name>/.
# Exits non-zero if a target fails to build or any input crashes one; crashing inputs are kept
# in build-san/artifacts/ (reproduce with: build-san/fuzz/<name> <file>).
#   FUZZ_SECONDS=N   seconds per target        FUZZ_TARGETS="fuzz_bundle ..."  run only these
#   FUZZ_JOBS=N      build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${SAN_BUILD_DIR:-build-san}
SECONDS_EACH=${FUZZ_SECONDS:-60}

targets=()
if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  for src in fuzz/fuzz_*.cpp; do
    [ -e "$src" ] && targets+=("$(basename "$src" .cpp)")
  done
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz/fuzz_*.cpp targets"
  exit 0
fi

SAN_BUILD_DIR="$BUILD" JOBS="${FUZZ_JOBS:-2}" bash scripts/sanitizer-build.sh "${targets[@]}"

mkdir -p "$BUILD/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  corpus="$BUILD/corpus-$t"
  mkdir -p "$corpus"
  seeds=()
  [ -d "fuzz/seeds/$t" ] && seeds+=("fuzz/seeds/$t")
  dict=()
  [ -f "fuzz/$t.dict" ] && dict+=("-dict=fuzz/$t.dict")
  echo "== $t: ${SECONDS_EACH}s"
  if ! "$BUILD/fuzz/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$ROOT/$BUILD/artifacts/$t-" "${dict[@]}" "$corpus" "${seeds[@]}" \
      > "$BUILD/$t.log" 2>&1; then
    echo "!! $t found a crash; log: $BUILD/$t.log" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$BUILD/$t.log" | head -20 >&2 || true
    failed+=("$t")
  else
    grep -E "stat::number_of_executed_units|cov:" "$BUILD/$t.log" | tail -2 || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s), no crashes"
