#!/bin/sh
# The sanitizer job of CI: builds build-asan/ (ASan+UBSan, libFuzzer targets), runs the tests under
# the sanitizers, replays the saved fuzz corpus and fuzzes each target briefly.
#   sh scripts/sanitize.sh [FUZZ_SECONDS]     (default 60 per target; 0 skips the fuzzing)
# See docs/security.md.
set -e
cd "$(dirname "$0")/.."
seconds=${1:-60}
sh scripts/sanitize-build.sh
# Container-overflow checks need every library instrumented (Debian's LLVM and protobuf are not);
# leaks are checked (LeakSanitizer is part of ASan).
export ASAN_OPTIONS=detect_container_overflow=0:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Everything but the two whole-suite conformance gates, which run in the Release build: under the
# sanitizers they take longer than the rest together.
ctest --test-dir build-asan --output-on-failure -j 2 -E '^e2e_onnx_conformance'
if [ "$seconds" -gt 0 ]; then
  for t in fuzz_model fuzz_model_dir fuzz_artifact fuzz_request fuzz_tokenizer; do
    KILN_FUZZ_NO_BUILD=1 sh scripts/fuzz.sh "$t" "$seconds"
  done
fi
echo "[sanitize] all passed"
