#!/bin/sh
# Sets up, builds, compiles the bundled example CNN (symbolic batch) and runs it at batch 1 and 7.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
sh scripts/build.sh
B=build/bin
mkdir -p build/demo
echo "== kiln-compile test/models/cnn/model.onnx -o build/demo/cnn.kiln"
$B/kiln-compile test/models/cnn/model.onnx -o build/demo/cnn.kiln
echo "== kiln-inspect build/demo/cnn.kiln"
$B/kiln-inspect build/demo/cnn.kiln
for set in 0 1; do
  echo "== kiln-run build/demo/cnn.kiln --test-data-dir test/models/cnn/test_data_set_$set"
  $B/kiln-run build/demo/cnn.kiln --test-data-dir test/models/cnn/test_data_set_$set
done
echo "(token decoding is not built yet: see the open language-model issue)"
