#!/bin/sh
# Install ONNX Runtime for Node (onnxruntime-node, CPU) into bench/node_modules.
#
# This is the ONLY step of kiln's tests and benchmarks that needs network (the
# npm registry). Tests never need it: the ORT reference outputs under
# test/models are checked in. It is needed to regenerate those references
# (test/models/gen_models.py) and to run the ORT side of bench/run.py.
#
#   sh bench/setup.sh            # idempotent; re-run to repair
#
# ONNXRUNTIME_NODE_INSTALL=skip stops the package's install script from
# downloading extra (GPU) binaries; the CPU binaries ship inside the package.
set -eu
ORT_VERSION="${ORT_VERSION:-1.30.0}"
cd "$(dirname "$0")"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "bench/setup.sh: error: node and npm are required (Node.js 18 or newer)" >&2
  exit 1
fi

have=$(node -e "try{console.log(require('./node_modules/onnxruntime-node/package.json').version)}catch(e){}" 2>/dev/null || true)
if [ "$have" != "$ORT_VERSION" ]; then
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$PWD" --no-save --no-package-lock --no-audit --no-fund \
    "onnxruntime-node@$ORT_VERSION"
fi

# Smoke test: load the native binding.
node -e "
const ort = require('./node_modules/onnxruntime-node');
console.log('onnxruntime-node', ort.env.versions.node, 'ready in', require('path').resolve('node_modules'));
"
