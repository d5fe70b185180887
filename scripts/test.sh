#!/bin/sh
# Sets up, builds, and runs every test (lit, unit, end to end, ONNX conformance gate).
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
sh scripts/build.sh
ctest --test-dir build --output-on-failure -j 2
