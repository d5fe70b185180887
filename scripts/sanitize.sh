#!/bin/sh
# The sanitizer job of CI: builds build-asan/ (ASan+UBSan, libFuzzer targets), runs the tests under
# the sanitizers, replays the saved fuzz corpus and fuzzes each target briefly.
#   sh scripts/sanitize.sh [FUZZ_SECONDS]     (default 60 per target; 0 skips the fuzzing)
# See docs/security.md.
set -e
cd "$(dirname "$0")/.."
seconds=${1:-60}
sh scripts/sanitize-build.sh
. scripts/sanitizer-env.sh
# Every test but those of scripts/sanitize-excluded.txt (the whole-suite gates, which run in the
# Release build: under the sanitizers they take longer than the rest together). The names are
# matched whole, and the run stops if the exclusion does not remove exactly the listed tests (a
# renamed test, or a pattern that also catches others, is an error, not a silent skip).
excluded=$(grep -v '^#' scripts/sanitize-excluded.txt | grep -v '^$')
regex="^($(echo $excluded | tr ' ' '|'))\$"
listed=$(echo "$excluded" | wc -l)
all=$(ctest --test-dir build-asan -N | sed -n 's/^Total Tests: //p')
kept=$(ctest --test-dir build-asan -N -E "$regex" | sed -n 's/^Total Tests: //p')
if [ $((all - kept)) -ne "$listed" ]; then
  echo "[sanitize] error: scripts/sanitize-excluded.txt lists $listed tests but its pattern excludes $((all - kept)) of $all" >&2
  exit 1
fi
echo "[sanitize] running $kept of $all tests (excluded, run in the Release job: $(echo $excluded))"
ctest --test-dir build-asan --output-on-failure -j 2 -E "$regex"
if [ "$seconds" -gt 0 ]; then
  for t in fuzz_model fuzz_model_dir fuzz_artifact fuzz_request fuzz_tokenizer; do
    KILN_FUZZ_NO_BUILD=1 sh scripts/fuzz.sh "$t" "$seconds"
  done
fi
echo "[sanitize] all passed"
