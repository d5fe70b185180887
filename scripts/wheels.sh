#!/bin/sh
# Builds kiln's two Python wheels, kiln (runtime + in-process compiler) and kiln-runtime (runtime
# only, no LLVM), offline, into ./dist (docs/python.md). Reuses ./build when configured (scripts/build.sh).
set -e
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  LAUNCHER=""
  command -v ccache >/dev/null 2>&1 && LAUNCHER="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 $LAUNCHER \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
fi
if ! ninja -C build -t query kiln_wheels >/dev/null 2>&1; then
  echo "wheels: the build has no Python binding (see cmake's 'kiln: Python binding' message)" >&2
  exit 1
fi
ninja -C build kiln_wheels
mkdir -p dist
rm -f dist/kiln-*.whl dist/kiln_runtime-*.whl
cp build/dist/*.whl dist/
ls -l dist/*.whl
