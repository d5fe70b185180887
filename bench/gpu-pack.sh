#!/bin/sh
# Prepares here, where kiln builds (LLVM/MLIR 22, the ONNX suite, Debian's python3-onnx), everything
# bench/gpu-check.sh runs on a GPU machine that has none of them (the lent H200's image has CUDA,
# PyTorch, numpy, onnx and ONNX Runtime for Python, no LLVM and no network): compiling needs no GPU,
# so every artifact is compiled here and only kiln-run (no LLVM, no MLIR) travels.
#
#   sh bench/gpu-pack.sh [ARCH]        (default sm_90) -> build/gpu-pack.tar.xz (must stay under ~45 MB:
#                                       the device tool carries 64 MiB with the ~13 MB checkout)
#
# Then, on the GPU machine, from the repository root with the pack carried along (docs/cuda.md):
#   sh bench/gpu-check.sh              (device tool: run(command=..., carry=["build/gpu-pack.tar.xz"]))
#
# The pack holds kiln-run and kiln-inspect; the CUDA conformance subset and kiln's own test models
# (test/e2e/cuda_compile_pass.txt), each compiled for ARCH with its data sets (test/models/lm/* with
# --kv-cache=false: their data sets are single calls in the "with past" layout, 7 inputs and the
# present outputs, which a KV-cache artifact, taking kiln.past_length as an 8th input, cannot run);
# the two test decoders in f32 (attention fused and unfused, keys split over blocks, paged caches), fp16 and
# bf16, with the greedy tokens the x86 build gives for each prompt; the bench GPT in f32 and the
# bench BERT in bf16 (attention fused), with ONNX Runtime's outputs; the large
# decoder's graph (bench/gpu/make_large_decoder.py, TinyLlama-1.1B shapes; weights are regenerated
# from the seed on the GPU machine and checked against weights.sha256 made here) and, when
# kiln-compile has --weights=external, its CUDA artifact (f32) and the x86 build's greedy tokens.
# Artifacts carry the cubin for ARCH and no PTX (--gpu-code=cubin; PTX only where no ptxas is
# found), so nothing is JIT-compiled there. The ResNet and MLP bench models stay behind: their
# weights alone are 72 MB.
#
# Environment: KILN_PACK_JOBS (compile jobs, default 2); KILN_PACK_LARGE_LAYERS (large decoder
# layers, default 22); KILN_PACK_LARGE_X86_TIMEOUT (seconds for the x86 compile + decode of the
# large decoder, default 300; past it the pack says "x86 tokens: not computed").
set -eu
cd "$(dirname "$0")/.."
arch=${1:-sm_90}
jobs=${KILN_PACK_JOBS:-2}
start=$(date +%s)
for b in kiln-compile kiln-run kiln-inspect; do
  [ -x build/bin/$b ] || { ninja -C build -j2 kiln-compile kiln-run kiln-inspect || sh scripts/build.sh; break; }
done
pack=build/gpu-pack
rm -rf "$pack" build/gpu-pack.tar.xz
mkdir -p "$pack/bin" "$pack/lm" "$pack/bench" "$pack/large"
cp build/bin/kiln-run build/bin/kiln-inspect "$pack/bin/"
echo "$arch" > "$pack/ARCH"
git rev-parse --short HEAD > "$pack/COMMIT" 2>/dev/null || echo "?" > "$pack/COMMIT"
git diff --quiet HEAD 2>/dev/null || echo "(with uncommitted changes)" >> "$pack/COMMIT"
# Cubins only, where ptxas is here: the driver would otherwise JIT-compile every artifact's PTX when
# it loads (on the H200, 221 s of the conformance step's time for ~1,000 models on 16 jobs).
if command -v ptxas >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/ptxas ]; then
  cuda="--target=cuda --gpu-arch=$arch --gpu-code=cubin"
else
  cuda="--target=cuda --gpu-arch=$arch --ptxas=none"
fi
cargs=$(for a in $cuda; do printf -- '--compile-arg=%s ' "$a"; done)

echo "[gpu-pack] conformance subset and own models for $arch"
grep -v -e '^#' -e '^test/' -e '^$' test/e2e/cuda_compile_pass.txt > "$pack/suite.txt"
grep '^test/' test/e2e/cuda_compile_pass.txt > "$pack/own.txt"
grep -v '^test/models/lm/' "$pack/own.txt" > build/gpu-pack-own-plain.txt || true
grep '^test/models/lm/' "$pack/own.txt" > build/gpu-pack-own-lm.txt || true
pack_set() {  # name root list out extra-compile-args...
  name=$1 root=$2 list=$3 dest=$4
  shift 4
  [ -s "$list" ] || return 0
  # shellcheck disable=SC2086
  python3 test/e2e/run_onnx_tests.py --bin build/bin --root "$root" --list "$list" -j "$jobs" \
    --save-artifacts "$dest" $cargs "$@" > "build/gpu-pack-$name.log" 2>&1 ||
    { echo "[gpu-pack] compiling $name failed:"; tail -5 "build/gpu-pack-$name.log"; exit 1; }
}
pack_set suite /usr/share/libonnx-testdata/data "$pack/suite.txt" "$pack/suite"
pack_set own . build/gpu-pack-own-plain.txt "$pack/own"
pack_set own-lm . build/gpu-pack-own-lm.txt "$pack/own" --compile-arg=--kv-cache=false
# Every input a data set needs must travel with it: each artifact's inputs against its data sets.
missing=0
while read -r t; do
  for ds in "$pack/own/$t"/test_data_set_*; do
    n=$(build/bin/kiln-inspect "$pack/own/$t/model.kiln" 2>/dev/null |
        awk '/^inputs:/ {i = 1; next} /^[a-z]/ {i = 0} i && /^  / {n++} END {print n + 0}')
    k=0
    while [ "$k" -lt "$n" ]; do
      [ -f "$ds/input_$k.pb" ] || { echo "[gpu-pack] $ds lacks input_$k.pb (the artifact has $n inputs)"; missing=1; }
      k=$((k + 1))
    done
  done
done < "$pack/own.txt"
[ $missing = 0 ] || exit 1

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
    # Paged KV caches (blocks of 16): the fused kernel reading the pools through the block table.
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --kv-block-size=16 "$model" -o "$pack/lm/$lm-paged.kiln"
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --kv-block-size=16 --gpu-attention-split-keys=128 "$model" \
      -o "$pack/lm/$lm-pagedsplit.kiln"
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --precision=fp16 "$model" -o "$pack/lm/$lm-fp16.kiln"
    build/bin/kiln-compile --quiet --kv-cache=true $cuda --precision=bf16 "$model" -o "$pack/lm/$lm-bf16.kiln"
  }
  # int8 and int4 weights (one output column per panel on the GPU), against x86 builds quantized the
  # same way (prompts 1 and 2).
  for q in int8 int4; do
    qflags="--quantize=$q --quantize-group=32"
    # shellcheck disable=SC2086
    build/bin/kiln-compile --quiet --kv-cache=true $cuda $qflags "$model" -o "$pack/lm/$lm-$q.kiln"
    # shellcheck disable=SC2086
    build/bin/kiln-compile --quiet --kv-cache=true $qflags "$model" -o "build/gpu-pack-$lm-x86-$q.kiln"
  done
  n=0
  while read -r prompt; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    build/bin/kiln-run generate "build/gpu-pack-$lm-x86.kiln" $prompt --ids --max-new-tokens 48 \
      > "$pack/lm/$lm-prompt$n.x86"
    for q in int8 int4; do
      [ $n -le 2 ] || continue
      # shellcheck disable=SC2086
      build/bin/kiln-run generate "build/gpu-pack-$lm-x86-$q.kiln" $prompt --ids --max-new-tokens 48 \
        > "$pack/lm/$lm-prompt$n-$q.x86"
    done
  done < "$pack/lm/prompts.txt"
done

echo "[gpu-pack] bench models (ONNX Runtime's reference outputs: needs bench/setup.sh once)"
[ -d bench/node_modules/onnxruntime-node ] || sh bench/setup.sh
/usr/bin/python3 bench/models/gen_bench_models.py --if-stale bert gpt > build/gpu-pack-bench.log
# (BERT with unfused attention stays behind: its second copy of the weights would push the pack
# over 45 MB.)
for variant in "gpt-fp32::" "bert-bf16-fused:--precision=bf16:"; do
  name=${variant%%:*}
  flags=$(echo "$variant" | cut -d: -f2- | tr ':' ' ')
  src=bench/models/out/${name%%-*}
  mkdir -p "$pack/bench/$name"
  # shellcheck disable=SC2086
  build/bin/kiln-compile --quiet $cuda $flags "$src/model.onnx" -o "$pack/bench/$name/model.kiln"
  cp -r "$src/test_data_set_0" "$pack/bench/$name/"
done

echo "[gpu-pack] large decoder"
# The weights (4.4 GB at full size) stay here, in build/large-decoder, regenerated only when the
# generator or the shape changes; the pack carries the graph, the seed and the checksum.
layers=${KILN_PACK_LARGE_LAYERS:-22}
seed=5303
L=$pack/large
big=build/large-decoder
stamp="seed $seed layers $layers $(cat bench/gpu/make_large_decoder.py test/models/gen_lm.py | sha256sum | cut -c1-16)"
if [ "$(cat "$big/STAMP" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$big"
  /usr/bin/python3 bench/gpu/make_large_decoder.py --seed $seed --layers "$layers" --out "$big"
  echo "$stamp" > "$big/STAMP"
fi
cp "$big/model.onnx" "$big/generation.json" "$big/weights.sha256" "$L/"
echo "--seed $seed --layers $layers" > "$L/ARGS"
echo "1,2,3,4,5,6,7,8" > "$L/prompt.txt"
if build/bin/kiln-compile --help 2>&1 | grep -q -e '--weights'; then
  # shellcheck disable=SC2086
  build/bin/kiln-compile --quiet --kv-cache=true $cuda --weights=external "$big/model.onnx" -o "$L/f32.kiln"
  # No fp16 build: --precision=fp16 converts the weights, and converted weights go to the kiln weights
  # file beside the artifact (2.2 GB here), which cannot travel. A model exported in fp16 would keep
  # its weights in the ONNX files.
  for w in "$L"/*.weights; do
    [ -f "$w" ] && [ "$(du -m "$w" | cut -f1)" -gt 4 ] && { echo "[gpu-pack] error: $w is $(du -h "$w" | cut -f1): weights the compiler transformed would not travel"; exit 1; }
  done
  t0=$(date +%s)
  if timeout "${KILN_PACK_LARGE_X86_TIMEOUT:-300}" sh -c "
      build/bin/kiln-compile --quiet --kv-cache=true '$big/model.onnx' -o '$big/x86.kiln' &&
      build/bin/kiln-run generate '$big/x86.kiln' --prompt-ids \$(cat '$L/prompt.txt') --ids --max-new-tokens 16 \
        > '$L/x86.tokens'"; then
    echo "x86 tokens at $layers layers in $(( $(date +%s) - t0 )) s" > "$L/NOTE"
  else
    rm -f "$L/x86.tokens"
    echo "x86 tokens: not computed (the x86 compile + decode ran past ${KILN_PACK_LARGE_X86_TIMEOUT:-300} s here)" > "$L/NOTE"
  fi
else
  echo "not run: kiln-compile has no --weights=external" > "$L/NOTE"
fi
echo "[gpu-pack] large decoder: $(cat "$L/NOTE")"

tar cJf build/gpu-pack.tar.xz -C build gpu-pack
size=$(du -m build/gpu-pack.tar.xz | cut -f1)
echo "[gpu-pack] build/gpu-pack.tar.xz: ${size} MB ($arch, commit $(head -1 "$pack/COMMIT")) in $(( $(date +%s) - start )) s"
if [ "$size" -gt 45 ]; then
  echo "[gpu-pack] error: the pack is over 45 MB: with the checkout it would not fit the 64 MiB the device tool carries"
  exit 1
fi
