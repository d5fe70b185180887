#!/bin/sh
# run_onnx_tests.py --save-artifacts / --prebuilt, as bench/gpu-pack.sh and bench/gpu-check.sh use
# them: compile here, run the kept artifacts from another folder with only kiln-run, same results.
#   check_prebuilt.sh BIN_DIR SOURCE_ROOT WORK_DIR
set -eu
bin=$1
root=$2
work=$3
rm -rf "$work"
mkdir -p "$work/bin"
runner="$root/test/e2e/run_onnx_tests.py"
python3 "$runner" --bin "$bin" --root "$root" --strict --save-artifacts "$work/pack" test/models/attention
# Only kiln-run beside the artifacts, as on a GPU machine without the compiler.
cp "$bin/kiln-run" "$work/bin/"
cd "$work"
python3 "$runner" --bin "$work/bin" --prebuilt --root "$work/pack" --strict --atol 1e-5 test/models/attention \
  | tee "$work/run.log"
# Every model of test/models/attention passes (a literal count went stale when one was added).
models=$(ls -d "$root"/test/models/attention/*/ | wc -l)
grep -q "kiln-e2e: $models passed, 0 failed" "$work/run.log"
# A damaged artifact is a failure, not a pass.
printf 'garbage' > "$work/pack/test/models/attention/plain_2d/model.kiln"
if python3 "$runner" --bin "$work/bin" --prebuilt --root "$work/pack" --strict test/models/attention > "$work/bad.log"; then
  echo "check_prebuilt: a damaged artifact passed"
  exit 1
fi
grep -q "runtime-error" "$work/bad.log"
echo "check_prebuilt: ok"
