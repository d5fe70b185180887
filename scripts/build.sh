#!/bin/sh
# Configures and builds kiln into ./build (Release, clang-22, Ninja), through ccache when it is installed
# (scripts/setup.sh installs it) so that a machine that has built kiln before reuses its objects.
set -e
cd "$(dirname "$0")/.."
. scripts/ccache-launcher.sh
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 $LAUNCHER \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
ninja -C build
