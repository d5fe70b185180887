#!/bin/sh
# Install ONNX Runtime for Node (onnxruntime-node, CPU) into bench/node_modules.
#
# This is the ONLY step of kiln's tests and benchmarks that needs network (the
# npm registry). Tests never need it: the ORT reference outputs under
# test/models are checked in. It is needed to regenerate those references
# (test/models/gen_models.py) and to run the ORT side of bench/run.py.
#
#   sh bench/setup.sh            # idempotent; re-run to repair
#   sh bench/setup.sh --vision   # also Debian's python3-torch, python3-torchvision and
#                                # python3-matplotlib (apt-get, as root), for the vision/OCR
#                                # models of bench/run.py (`--cases vision`,
#                                # bench/models/gen_cnn_models.py) and `--plot`
#
# The --vision packages are for benchmarking only (about 1 GB with their dependencies):
# nothing in CI or the tests needs them. Each is installed only when
# /usr/bin/python3 cannot import it already.
#
# ONNXRUNTIME_NODE_INSTALL=skip stops the package's install script from
# downloading extra (GPU) binaries; the CPU binaries ship inside the package.
set -eu
ORT_VERSION="${ORT_VERSION:-1.30.0}"
cd "$(dirname "$0")"

VISION=0
for arg in "$@"; do
  case "$arg" in
    --vision) VISION=1 ;;
    *) echo "bench/setup.sh: error: unknown argument '$arg' (usage: sh bench/setup.sh [--vision])" >&2
       exit 2 ;;
  esac
done

# Debian package, Python module: what gen_cnn_models.py and run.py --plot import.
VISION_PKGS="python3-torch:torch python3-torchvision:torchvision python3-matplotlib:matplotlib"
missing=""
for pm in $VISION_PKGS; do
  if ! /usr/bin/python3 -c "import ${pm#*:}" >/dev/null 2>&1; then
    missing="$missing ${pm%%:*}"
  fi
done
if [ -n "$missing" ]; then
  if [ "$VISION" = 1 ]; then
    echo "bench/setup.sh: installing$missing (apt-get; for the vision/OCR benchmarks only)"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y $missing || {
      echo "bench/setup.sh: error: apt-get install$missing failed (needs root and Debian's" \
        "repositories; try apt-get update first)" >&2
      exit 1
    }
  else
    echo "bench/setup.sh: note:$missing not installed: bench/run.py --cases vision and --plot" \
      "need them (sh bench/setup.sh --vision installs them)"
  fi
elif [ "$VISION" = 1 ]; then
  echo "bench/setup.sh: python3-torch, python3-torchvision, python3-matplotlib already installed"
fi

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
