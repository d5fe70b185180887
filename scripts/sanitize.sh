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
# Everything but the two whole-suite conformance gates, which run in the Release build: under the
# sanitizers they take longer than the rest together.
ctest --test-dir build-asan --output-on-failure -j 2 -E '^(e2e_onnx_conformance|e2e_cuda_compile|e2e_cuda_emulated_(conformance|models_fallback|decode))'
if [ "$seconds" -gt 0 ]; then
  for t in fuzz_model fuzz_model_dir fuzz_artifact fuzz_request fuzz_tokenizer; do
    KILN_FUZZ_NO_BUILD=1 sh scripts/fuzz.sh "$t" "$seconds"
  done
fi
echo "[sanitize] all passed"
