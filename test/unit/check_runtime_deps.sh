#!/bin/sh
# Fails if the shared runtime library depends on anything but libc/libstdc++/libm/libgcc/pthread/dl (no LLVM/MLIR).
set -eu
lib="$1"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
status=0
for dep in $needed; do
  case "$dep" in
    libc.so.*|libstdc++.so.*|libm.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*|ld-linux*) ;;
    *) echo "unexpected dependency of $lib: $dep"; status=1 ;;
  esac
done
# ldd also sees transitive dependencies.
if ldd "$lib" | grep -Ei 'llvm|mlir|protobuf|onnx'; then
  echo "$lib pulls in LLVM/MLIR/protobuf/ONNX"; status=1
fi
[ "$status" -eq 0 ] && echo "ok: $lib needs only: $needed"
exit $status
