#!/bin/sh
# Builds the runtime alone with ThreadSanitizer into build-tsan/ and runs the concurrency tests and the thread-pool tests under it.
#
#   scripts/tsan.sh                      # needs build/bin/kiln-compile (a normal Release build) for the artifacts
#   KILN_SANITIZER=address scripts/tsan.sh   # the same with AddressSanitizer + LeakSanitizer, into build-asan-rt/
#   KILN_STRESS_RUNS=1000 scripts/tsan.sh    # the full load test (default 60 runs per thread)
#
# The artifacts are compiled by the uninstrumented kiln-compile, so the generated kernels are not
# instrumented: TSan checks the runtime's own synchronization (thread pool, sessions, generators,
# model reference counts, loading), not races inside a kernel's loops.
# The sanitizer flags go in through CMAKE_*_FLAGS here rather than a CMake option, so this script
# does not depend on how the top-level CMakeLists.txt spells sanitizer support.
set -e
cd "$(dirname "$0")/.."
sanitizer=${KILN_SANITIZER:-thread}
case "$sanitizer" in
  thread) build=${KILN_TSAN_BUILD_DIR:-build-tsan} ;;
  *) build=${KILN_TSAN_BUILD_DIR:-build-asan-rt} ;;
esac
compile=${KILN_COMPILE:-build/bin/kiln-compile}
if [ ! -x "$compile" ]; then
  echo "tsan.sh: $compile not found: build the compiler first (scripts/build.sh) or set KILN_COMPILE" >&2
  exit 1
fi
flags="-fsanitize=$sanitizer -fno-omit-frame-pointer -g -O1"
. scripts/ccache-launcher.sh
# shellcheck disable=SC2086
cmake -G Ninja -S . -B "$build" -DKILN_BUILD_COMPILER=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 $LAUNCHER \
  "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=$sanitizer" "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=$sanitizer" >/dev/null
ninja -C "$build" kiln_concurrency_tests kiln_runtime_tests kiln_tokenizer_tests
# kiln-serve (HTTP threads, the per-model engine, cancellation and drain) and the kiln-run its
# end-to-end test compares tokens with; absent where libcpp-httplib-dev is (the build says so).
serve=false
if ninja -C "$build" -t targets all 2>/dev/null | grep -q '^kiln-serve:'; then
  ninja -C "$build" kiln-serve kiln-run kiln_serve_unit_tests
  serve=true
fi

artifacts="$build/artifacts"
mkdir -p "$artifacts"
models=test/models
compileIfStale() { # name, model, flags...
  name=$1 model=$2
  shift 2
  if [ ! -f "$artifacts/$name.kiln" ] || [ "$model" -nt "$artifacts/$name.kiln" ] || [ "$compile" -nt "$artifacts/$name.kiln" ]; then
    "$compile" --quiet "$model" -o "$artifacts/$name.kiln" "$@"
  fi
}
compileIfStale cnn $models/cnn/model.onnx
compileIfStale mlp $models/mlp/model.onnx
compileIfStale mlp_int8_dynamic $models/mlp/model.onnx --quantize=int8-dynamic
compileIfStale gpt2 $models/lm/gpt2/model.onnx --max-context 256
compileIfStale llama $models/lm/llama/model.onnx --max-context 256
compileIfStale llama_paged16 $models/lm/llama/model.onnx --max-context 256 --kv-block-size 16
# As test/CMakeLists.txt: IEEE denormals (the caller's mode decides), and the default (flushed).
compileIfStale mul /usr/share/libonnx-testdata/data/node/test_mul/model.onnx --symbolic-input-dims --denormals=keep
compileIfStale mul_flush /usr/share/libonnx-testdata/data/node/test_mul/model.onnx --symbolic-input-dims

export KILN_E2E_ARTIFACT_DIR="$artifacts"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 ${UBSAN_OPTIONS:-}"
# Repeated runs check determinism, which the Release ctest already covers; here they only add time.
export KILN_DETERMINISM_RUNS="${KILN_DETERMINISM_RUNS:-20}"
"$build/bin/kiln_concurrency_tests"
"$build/bin/kiln_runtime_tests" --gtest_filter='ThreadPool.*:CpuDevice.*:Runtime.*'
"$build/bin/kiln_tokenizer_tests" --gtest_filter='*Concurrent*'
if $serve; then
  "$build/bin/kiln_serve_unit_tests"
  # The server's end-to-end test against the sanitized kiln-serve: a report makes the server exit
  # non-zero (halt_on_error), which the test sees as a failed request or start. The v2 dtype checks
  # need the Release build's node-test artifacts and run there (and under ASan). test_timeouts gives
  # every request 0.3 s, which a server slowed 5-15x by TSan misses for ordinary requests too (CI
  # failed it once); the Release and ASan runs keep it.
  TSAN_OPTIONS="$TSAN_OPTIONS suppressions=$(pwd)/scripts/tsan-serve.supp" \
    /usr/bin/python3 test/serve/serve_test.py --bin "$build/bin" --artifacts "$artifacts" --models "$models" \
    --skip test_timeouts
fi
echo "tsan.sh: no reports from -fsanitize=$sanitizer"
