#!/bin/sh
# The bench models (bench/models/gen_bench_models.py, generated here without reference outputs)
# compile for --target=cuda for sm_80 and sm_90, and ptxas assembles them where it exists; the
# decoder also with --precision=fp16 and bf16 (sm_90).
#   check_cuda_bench_compile.sh BIN_DIR WORK_DIR
# Exit 77 (skipped) without Debian's python3-onnx, which the generator needs.
set -eu
bin=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c "import onnx, numpy" 2>/dev/null; then
  echo "check_cuda_bench_compile: /usr/bin/python3 has no onnx/numpy (apt-get install python3-onnx); skipped"
  exit 77
fi
/usr/bin/python3 "$here/../../bench/models/gen_bench_models.py" --no-reference --out "$work" >/dev/null
python3 "$here/check_cuda_compile.py" --bin "$bin" --root "$work" --models mlp resnet bert gpt \
  --arch sm_80 sm_90 -j 2 --strict
for precision in fp16 bf16; do
  python3 "$here/check_cuda_compile.py" --bin "$bin" --root "$work" --models gpt --arch sm_90 -j 2 --strict \
    --compile-arg=--precision=$precision
done
