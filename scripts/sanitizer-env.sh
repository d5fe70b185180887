# Sourced by the sanitizer scripts (sanitize-build.sh, sanitize.sh, fuzz.sh): the options every
# instrumented kiln binary runs with, also the kiln-compile runs of the build itself.
# - detect_container_overflow=0: these checks need every library instrumented, and Debian's LLVM,
#   MLIR and protobuf are not.
# - allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs from inline header code; with
#   kiln's instrumented copy and lld's uninstrumented one mixed in kiln-compile, that poisoning
#   reports use-after-poison in lld's own allocations.
# - allocator_may_return_null=1: a huge malloc returns NULL, as glibc's does, so the tests of
#   kiln's out-of-memory paths see what production sees instead of ASan's abort.
# - detect_leaks=1: LeakSanitizer stays on.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_container_overflow=0:allow_user_poisoning=0:allocator_may_return_null=1:detect_leaks=1}"
# - LSAN_OPTIONS: scripts/lsan.supp names the leaks that are inside libraries kiln does not build
#   (the CUDA toolkit's); every caller sources this file from the repository root.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(pwd)/scripts/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
