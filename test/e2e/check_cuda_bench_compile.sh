#!/bin/sh
# The bench models (bench/models/gen_bench_models.py, generated here without reference outputs)
# compile for --target=cuda for sm_80 and sm_90, and ptxas assembles them where it exists; the
# decoder also with --precision=fp16 and bf16 (sm_90). Then the encoder and the decoder compiled for
# --target=cuda-emulated (the CUDA pipeline's kernels on the CPU: the norm kernels, the attention
# reading its heads through views of the QKV product) give the x86 build's outputs.
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
for model in bert gpt; do
  "$bin/kiln-compile" "$work/$model/model.onnx" -o "$work/$model.x86.kiln" --quiet
  "$bin/kiln-compile" "$work/$model/model.onnx" --target=cuda-emulated -o "$work/$model.emulated.kiln" --quiet
  rm -rf "$work/$model.out" && mkdir "$work/$model.out"
  "$bin/kiln-run" "$work/$model.x86.kiln" "$work/$model"/test_data_set_0/input_*.pb --quiet --output-dir "$work/$model.out"
  "$bin/kiln-run" "$work/$model.emulated.kiln" "$work/$model"/test_data_set_0/input_*.pb --quiet \
    --expect "$work/$model.out"/0_*.npy --rtol 1e-4 --atol 1e-5
  echo "check_cuda_bench_compile: $model emulated = x86"
done
