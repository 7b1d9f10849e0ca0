#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer: the C++ suite (unit and golden kernels) and `dirigo check` on
# every committed bundle, from the sanitizer build (scripts/sanitizer-build.sh, build-san/). Any report of either
# sanitizer fails the run (halt_on_error). scripts/test.sh runs it; JOBS sets the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${SAN_BUILD_DIR:-build-san}
bash scripts/sanitizer-build.sh
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
echo "== C++ tests under ASan+UBSan"
ctest --test-dir "$B" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 1200
echo "== every committed bundle under ASan+UBSan"
fail=0
while IFS= read -r m; do
  d=$(dirname "$m")
  set +e
  "$B/dirigo" check "$d" --json --budget 5 >/dev/null 2>"$B/sanitize.err"
  rc=$?
  set -e
  # verdict exit codes are 0-4; 70 is an internal error, anything else a sanitizer abort or a crash
  if [ "$rc" -gt 4 ]; then echo "FAIL ($rc): $d"; tail -20 "$B/sanitize.err"; fail=1; else echo "ok ($rc): $d"; fi
done < <(git ls-files '*manifest.json' | grep -v '^tests/python/fake_cuda')
exit $fail
