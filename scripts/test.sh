#!/bin/sh
# Sets up, builds, and runs every test: lit, unit, end to end, the ONNX conformance gate (Release
# build), then the runtime's concurrency tests under ThreadSanitizer and everything again under
# AddressSanitizer+UBSan with the fuzz corpus replayed and each fuzz target run briefly.
# KILN_SKIP_SANITIZERS=1 stops after the Release tests.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
sh scripts/build.sh
ctest --test-dir build --output-on-failure -j 2
[ -n "$KILN_SKIP_SANITIZERS" ] && exit 0
sh scripts/tsan.sh
sh scripts/sanitize.sh "${KILN_FUZZ_SECONDS:-30}"
