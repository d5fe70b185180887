#!/bin/sh
# Prepares here, where kiln builds (LLVM/MLIR 22, the ONNX suite, Debian's python3-onnx), everything
# bench/gpu-check.sh runs on a GPU machine that has none of them (the lent H200's image has CUDA,
# PyTorch and ONNX Runtime for Python, no LLVM and no network): compiling needs no GPU, so every
# artifact is compiled here and only kiln-run (no LLVM, no MLIR) travels.
#
#   sh bench/gpu-pack.sh [ARCH]        (default sm_90) -> build/gpu-pack.tar.xz, about 45 MB
#
# Then, on the GPU machine, from the repository root with the pack carried along:
#   sh bench/gpu-check.sh              (device tool: run(command=..., carry=["build/gpu-pack.tar.xz"]))
#
# The pack holds kiln-run and kiln-inspect; the CUDA conformance subset and kiln's own test models
# (test/e2e/cuda_compile_pass.txt), each compiled for ARCH with its data sets; the two test
# decoders in f32 (attention fused and unfused, keys split over blocks), fp16 and bf16, with the
# greedy tokens the x86 build gives for each prompt; the bench GPT in f32 and the bench BERT in
# bf16 with attention fused and unfused, with ONNX Runtime's outputs. Artifacts carry PTX only
# (the driver compiles it when the model loads): with cubins the pack would not fit the 64 MiB that
# travels. The ResNet and MLP bench models stay behind for the same reason (their weights alone
# are 72 MB).
set -eu
cd "$(dirname "$0")/.."
arch=${1:-sm_90}
[ -x build/bin/kiln-compile ] || sh scripts/build.sh
pack=build/gpu-pack
rm -rf "$pack" build/gpu-pack.tar.xz
mkdir -p "$pack/bin" "$pack/lm" "$pack/bench"
cp build/bin/kiln-run build/bin/kiln-inspect "$pack/bin/"
echo "$arch" > "$pack/ARCH"
git rev-parse --short HEAD > "$pack/COMMIT" 2>/dev/null || echo "?" > "$pack/COMMIT"
cuda="--target=cuda --gpu-arch=$arch --ptxas=none"

echo "[gpu-pack] conformance subset and own models for $arch"
grep -v -e '^#' -e '^test/' test/e2e/cuda_compile_pass.txt > "$pack/suite.txt"
grep '^test/' test/e2e/cuda_compile_pass.txt > "$pack/own.txt"
for set in suite own; do
  root=.
  [ $set = suite ] && root=/usr/share/libonnx-testdata/data
  # shellcheck disable=SC2086
  python3 test/e2e/run_onnx_tests.py --bin build/bin --root $root --list "$pack/$set.txt" --strict -j 2 \
    --save-artifacts "$pack/$set" $(for a in $cuda; do printf -- '--compile-arg=%s ' "$a"; done) \
    > "build/gpu-pack-$set.log" 2>&1 || { tail -5 "build/gpu-pack-$set.log"; exit 1; }
done

echo "[gpu-pack] decoders"
# The prompts (the long ones: 148 keys by the last step, two blocks a row with split keys of 128).
ids() { seq -s, "$1" "$2"; }
printf '%s\n' "--prompt-ids 1,2,3,4,5" "--prompt-ids 7,8,9 --prompt-ids 10,11,12,13,14,15" \
  "--prompt-ids $(ids 1 100)" "--prompt-ids $(ids 201 260) --prompt-ids $(ids 101 200)" > "$pack/lm/prompts.txt"
for lm in gpt2 llama; do
  model=test/models/lm/$lm/model.onnx
  build/bin/kiln-compile --quiet --kv-cache=true "$model" -o "build/gpu-pack-$lm-x86.kiln"
  # shellcheck disable=SC2086
  {
    build/bin/kiln-compile --quiet --kv-cache=true $cuda "$model" -o "$pack/lm/$lm-fused.kiln"
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --gpu-attention=unfused "$model" -o "$pack/lm/$lm-unfused.kiln"
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --gpu-attention-split-keys=128 "$model" -o "$pack/lm/$lm-split.kiln"
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --precision=fp16 "$model" -o "$pack/lm/$lm-fp16.kiln"
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --precision=bf16 "$model" -o "$pack/lm/$lm-bf16.kiln"
  }
  n=0
  while read -r prompt; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    build/bin/kiln-run generate "build/gpu-pack-$lm-x86.kiln" $prompt --ids --max-new-tokens 48 \
      > "$pack/lm/$lm-prompt$n.x86"
  done < "$pack/lm/prompts.txt"
done

echo "[gpu-pack] bench models (ONNX Runtime's reference outputs: needs bench/setup.sh once)"
[ -d bench/node_modules/onnxruntime-node ] || sh bench/setup.sh
/usr/bin/python3 bench/models/gen_bench_models.py --if-stale bert gpt > build/gpu-pack-bench.log
for variant in "gpt-fp32::" "bert-bf16-fused:--precision=bf16:" "bert-bf16-unfused:--precision=bf16:--gpu-attention=unfused"; do
  name=${variant%%:*}
  flags=$(echo "$variant" | cut -d: -f2- | tr ':' ' ')
  src=bench/models/out/${name%%-*}
  mkdir -p "$pack/bench/$name"
  # shellcheck disable=SC2086
  build/bin/kiln-compile --quiet $cuda $flags "$src/model.onnx" -o "$pack/bench/$name/model.kiln"
  cp -r "$src/test_data_set_0" "$pack/bench/$name/"
done

tar cJf build/gpu-pack.tar.xz -C build gpu-pack
echo "[gpu-pack] build/gpu-pack.tar.xz: $(du -h build/gpu-pack.tar.xz | cut -f1) ($arch, commit $(cat "$pack/COMMIT"))"
