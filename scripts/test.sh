#!/bin/sh
# Sets up, builds, and runs every test: lit, unit, end to end, the ONNX conformance gate (Release
# build), then the runtime's concurrency tests under ThreadSanitizer and everything again under
# AddressSanitizer+UBSan with the fuzz corpus replayed and each fuzz target run briefly.
# KILN_SKIP_SANITIZERS=1 stops after the Release tests. Prints each stage's wall time and the total
# (CI's budget: docs/ci.md).
set -e
cd "$(dirname "$0")/.."
t0=$(date +%s)
times=""
stage() { # NAME COMMAND...: runs one stage and records its wall time
  name=$1; shift
  s=$(date +%s)
  echo "[ci] stage $name: $*"
  "$@"
  e=$(( $(date +%s) - s ))
  times="$times
  $(printf '%-10s %5ds' "$name" "$e")"
  echo "[ci] stage $name took ${e}s (total so far $(( $(date +%s) - t0 ))s)"
}
report() {
  echo "[ci] stage times:$times"
  echo "[ci] total $(( $(date +%s) - t0 ))s"
  command -v ccache >/dev/null 2>&1 && ccache -s 2>/dev/null | grep -iE '^ *(hits|misses|cache size)|cacheable' || true
}
trap report EXIT
stage setup sh scripts/setup.sh
stage build sh scripts/build.sh
stage test ctest --test-dir build --output-on-failure -j 2
[ -n "$KILN_SKIP_SANITIZERS" ] && exit 0
stage tsan sh scripts/tsan.sh
stage asan-build sh scripts/sanitize-build.sh
stage asan-test sh scripts/sanitize.sh 0
stage fuzz env KILN_FUZZ_NO_BUILD=1 sh scripts/fuzz.sh all "${KILN_FUZZ_SECONDS:-30}"
