#!/bin/sh
# Configures and builds kiln with ASan+UBSan and the libFuzzer targets into ./build-asan.
set -e
cd "$(dirname "$0")/.."
. scripts/sanitizer-env.sh # the build runs the instrumented kiln-compile
# -O1 and line tables only: sanitizer reports need file:line, not full debug info, and this keeps
# the build short on CI's two cores.
. scripts/ccache-launcher.sh
cmake -G Ninja -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo $LAUNCHER \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DKILN_SANITIZE=address,undefined -DKILN_FUZZ=ON ${KILN_CMAKE_ARGS:-} >/dev/null
ninja -C build-asan ${NINJA_ARGS:-}
