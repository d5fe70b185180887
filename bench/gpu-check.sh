#!/bin/sh
# Everything that needs an NVIDIA GPU, in one run: the CUDA conformance subset on the GPU against the
# ONNX reference outputs, the bench models on the GPU against ONNX Runtime (CPU, the only build the
# offline npm registry gives) in the same run, decoding on the GPU against the x86 path, and a short
# report.
#
#   sh bench/gpu-check.sh [OUT_DIR]      (default build/gpu-check; the report is OUT_DIR/report.md)
#
# Needs: an NVIDIA driver (libcuda.so.1) and GPU; the CUDA toolkit's ptxas is used when found. It builds
# kiln first when build/bin/kiln-compile is missing. Exit status 0 only if every check passed.
# Environment: KILN_GPU_ARCH (default: the GPU's own, from nvidia-smi), KILN_GPU_CHECK_LIST (the models
# checked on the GPU, default test/e2e/cuda_compile_pass.txt), KILN_GPU_BENCH (bench cases, default
# bench:mlp,bench:resnet,bench:bert,bench:gpt; "none" skips the benchmarks).
set -u
cd "$(dirname "$0")/.."
out=${1:-build/gpu-check}
mkdir -p "$out"
report=$out/report.md
status=0
[ -x build/bin/kiln-compile ] || sh scripts/build.sh || exit 1
export PATH="$PATH:/usr/local/cuda/bin"
# cuBLASLt serves the matrix products; the toolkit's copy is found through the loader path.
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

arch=${KILN_GPU_ARCH:-}
if [ -z "$arch" ] && command -v nvidia-smi >/dev/null 2>&1; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [ -n "$cc" ] && arch=sm_$cc
fi
if [ -z "$arch" ]; then
  echo "gpu-check: no NVIDIA GPU found (nvidia-smi gives no compute capability); nothing to check" | tee "$report"
  exit 1
fi
{
  echo "# kiln GPU check ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?))"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 | head -3
  echo "arch: $arch; ptxas: $(command -v ptxas || echo none)"
  echo "cuBLASLt: $(ls /usr/local/cuda/lib64/libcublasLt.so.* 2>/dev/null | head -1 || echo none)"
  echo '```'
} > "$report"

# 1. The CUDA conformance subset on the GPU: each model compiled with --target=cuda, run, compared
#    with the suite's outputs (ONNX's tolerances).
list=${KILN_GPU_CHECK_LIST:-test/e2e/cuda_compile_pass.txt}
echo "[gpu-check] conformance on the GPU ($list)"
# The list mixes ONNX suite tests (relative to the suite) and kiln's own models (test/models/...).
grep -v -e '^#' -e '^test/' "$list" > "$out/suite.txt"
grep '^test/' "$list" > "$out/own.txt"
python3 test/e2e/run_onnx_tests.py --bin build/bin --root /usr/share/libonnx-testdata/data -j 4 \
  --rtol 1e-3 --atol 1e-7 --compile-arg=--target=cuda --compile-arg=--gpu-arch=$arch \
  --list "$out/suite.txt" --report "$out/conformance.json" > "$out/conformance.log" 2>&1
rc=$?
python3 test/e2e/run_onnx_tests.py --bin build/bin --root . -j 4 --atol 1e-4 \
  --compile-arg=--target=cuda --compile-arg=--gpu-arch=$arch \
  --list "$out/own.txt" --report "$out/own-models.json" > "$out/own-models.log" 2>&1 || rc=1
{
  echo
  echo "## Conformance on the GPU ($arch)"
  echo '```'
  tail -15 "$out/conformance.log"
  echo "kiln's own models:"
  tail -8 "$out/own-models.log"
  echo '```'
} >> "$report"
[ $rc -eq 0 ] || status=1

# 2. The bench models: kiln on the GPU next to ONNX Runtime on the CPU, same inputs, checked.
cases=${KILN_GPU_BENCH:-bench:mlp,bench:resnet,bench:bert,bench:gpt}
if [ "$cases" != none ]; then
  echo "[gpu-check] bench models ($cases)"
  python3 bench/run.py --bin build/bin --cases "$cases" --threads 1 --rounds 1 \
    --compile-args "--target=cuda --gpu-arch=$arch" --markdown --json "$out/bench.json" > "$out/bench.log" 2>&1
  rc=$?
  {
    echo
    echo "## Bench models: kiln on the GPU vs ONNX Runtime (CPU, 1 thread)"
    echo
    tail -20 "$out/bench.log"
  } >> "$report"
  [ $rc -eq 0 ] || status=1
  # The same decoder with kiln's own product kernels instead of cuBLASLt: what the library buys.
  echo "[gpu-check] bench:gpt without cuBLASLt"
  KILN_CUBLASLT=none python3 bench/run.py --bin build/bin --cases bench:gpt --threads 1 --rounds 1 \
    --compile-args "--target=cuda --gpu-arch=$arch" --markdown --json "$out/bench-no-cublaslt.json" \
    > "$out/bench-no-cublaslt.log" 2>&1 || status=1
  {
    echo
    echo "### bench:gpt with KILN_CUBLASLT=none (kiln's one-thread-per-output products)"
    echo
    tail -8 "$out/bench-no-cublaslt.log"
  } >> "$report"
fi

# 2b. Attention: the fused kernel (the default, above) against the unfused form (products to
#     cuBLASLt, the softmax as block reductions, scores in device memory), in the same run.
if [ "$cases" != none ]; then
  echo "[gpu-check] bench:bert,bench:gpt with --gpu-attention=unfused"
  python3 bench/run.py --bin build/bin --cases bench:bert,bench:gpt --threads 1 --rounds 1 \
    --compile-args "--target=cuda --gpu-arch=$arch --gpu-attention=unfused" --markdown \
    --json "$out/bench-unfused-attention.json" > "$out/bench-unfused-attention.log" 2>&1 || status=1
  {
    echo
    echo "### bench:bert and bench:gpt with --gpu-attention=unfused (compare with the fused rows above)"
    echo
    tail -10 "$out/bench-unfused-attention.log"
  } >> "$report"
fi

# 3. Decoding on the GPU: the tiny language models compiled for CUDA and for x86 must give the same
#    greedy tokens (a batch of one and a left-padded batch of two), and the GPU's tokens/s is reported.
echo "[gpu-check] decoding on the GPU"
{
  echo
  echo "## Decoding on the GPU: greedy tokens equal to the x86 path"
  echo '```'
} >> "$report"
for lm in gpt2 llama; do
  model=test/models/lm/$lm/model.onnx
  if ! build/bin/kiln-compile --quiet --kv-cache=true --target=cuda --gpu-arch=$arch "$model" -o "$out/$lm-cuda.kiln" \
      > "$out/$lm-compile.log" 2>&1 ||
     ! build/bin/kiln-compile --quiet --kv-cache=true "$model" -o "$out/$lm-cpu.kiln" >> "$out/$lm-compile.log" 2>&1; then
    echo "$lm: compile failed: $(head -1 "$out/$lm-compile.log")" >> "$report"
    status=1
    continue
  fi
  for prompt in "--prompt-ids 1,2,3,4,5" "--prompt-ids 7,8,9 --prompt-ids 10,11,12,13,14,15"; do
    # shellcheck disable=SC2086
    gpu=$(build/bin/kiln-run generate "$out/$lm-cuda.kiln" $prompt --ids --max-new-tokens 48 --stats 2> "$out/$lm-gpu.stats")
    rc=$?
    # shellcheck disable=SC2086
    cpu=$(build/bin/kiln-run generate "$out/$lm-cpu.kiln" $prompt --ids --max-new-tokens 48 2> /dev/null)
    # Achieved bandwidth: every decode step reads all the weights once; H200 HBM3e reads ~4800 GB/s.
    bw=$(build/bin/kiln-inspect --json "$out/$lm-cuda.kiln" | python3 -c '
import json, sys
w = json.load(sys.stdin)["weights_bytes"]
s = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
gbs = w * s["tokens_per_second"] / s["batch"] / 1e9
print("weights %.1f MB, %.1f GB/s = %.2f%% of 4800 GB/s" % (w / 1e6, gbs, 100 * gbs / 4800))' "$out/$lm-gpu.stats" 2>/dev/null)
    if [ $rc -eq 0 ] && [ "$gpu" = "$cpu" ] && [ -n "$gpu" ]; then
      echo "$lm ($prompt): same tokens; $bw; gpu stats $(tail -1 "$out/$lm-gpu.stats")" >> "$report"
    else
      echo "$lm ($prompt): DIFFERENT (rc $rc): gpu [$gpu] cpu [$cpu] $(tail -1 "$out/$lm-gpu.stats")" >> "$report"
      status=1
    fi
  done
done
echo '```' >> "$report"

# 3b. Decoding with attention unfused: the same tokens, and its tokens/s next to the fused kernel's.
echo "[gpu-check] decoding with --gpu-attention=unfused"
{
  echo
  echo "## Decoding with --gpu-attention=unfused (tokens must equal the x86 path's)"
  echo '```'
} >> "$report"
for lm in gpt2 llama; do
  art=$out/$lm-cuda-unfused.kiln
  if ! build/bin/kiln-compile --quiet --kv-cache=true --target=cuda --gpu-arch=$arch --gpu-attention=unfused \
      test/models/lm/$lm/model.onnx -o "$art" > "$out/$lm-unfused.log" 2>&1; then
    echo "$lm unfused: compile failed: $(head -1 "$out/$lm-unfused.log")" >> "$report"
    status=1
    continue
  fi
  gpu=$(build/bin/kiln-run generate "$art" --prompt-ids 1,2,3,4,5 --ids --max-new-tokens 48 --stats 2> "$out/$lm-unfused.stats")
  rc=$?
  cpu=$(build/bin/kiln-run generate "$out/$lm-cpu.kiln" --prompt-ids 1,2,3,4,5 --ids --max-new-tokens 48 2> /dev/null)
  if [ $rc -eq 0 ] && [ "$gpu" = "$cpu" ] && [ -n "$gpu" ]; then
    echo "$lm unfused: same tokens; gpu stats $(tail -1 "$out/$lm-unfused.stats")" >> "$report"
  else
    echo "$lm unfused: DIFFERENT (rc $rc): gpu [$gpu] cpu [$cpu]" >> "$report"
    status=1
  fi
done
echo '```' >> "$report"

# 4. Half precision: the decoders with --precision=fp16 and bf16 (weights in 2 bytes, tensor
#    cores). Rounding may change a greedy token of these random-weight models, so the agreement
#    with fp32 is reported, not required; the run must succeed.
echo "[gpu-check] decoding in half precision"
{
  echo
  echo "## Decoding with --precision=fp16|bf16"
  echo '```'
} >> "$report"
for lm in gpt2 llama; do
  ref=$(build/bin/kiln-run generate "$out/$lm-cpu.kiln" --prompt-ids 1,2,3,4,5 --ids --max-new-tokens 48 2> /dev/null)
  for precision in fp16 bf16; do
    art=$out/$lm-cuda-$precision.kiln
    if ! build/bin/kiln-compile --quiet --kv-cache=true --target=cuda --gpu-arch=$arch --precision=$precision \
        test/models/lm/$lm/model.onnx -o "$art" > "$out/$lm-$precision.log" 2>&1; then
      echo "$lm $precision: compile failed: $(head -1 "$out/$lm-$precision.log")" >> "$report"
      status=1
      continue
    fi
    got=$(build/bin/kiln-run generate "$art" --prompt-ids 1,2,3,4,5 --ids --max-new-tokens 48 --stats 2> "$out/$lm-$precision.stats")
    rc=$?
    same=$(python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); n = 0
while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
print("%d of %d tokens as fp32 before the first difference" % (n, len(b)))' "$got" "$ref")
    echo "$lm $precision (rc $rc): $same; weights $(build/bin/kiln-inspect --json "$art" | python3 -c 'import json,sys; print(json.load(sys.stdin)["weights_bytes"])') bytes; $(tail -1 "$out/$lm-$precision.stats")" >> "$report"
    [ $rc -eq 0 ] || status=1
  done
done
echo '```' >> "$report"

# 5. Where the time goes: kiln's launches of a BERT and a GPT forward pass on the GPU, by total time
#    (each launch timed with CUDA events; products through cuBLASLt are not launches of kiln's).
echo "[gpu-check] profiles"
{
  echo
  echo "## Profiles: kiln's kernels by total time (20 runs after 3 warm-up runs)"
} >> "$report"
for name in bert gpt; do
  dir=bench/models/out/$name
  [ -f "$dir/model.onnx" ] || continue
  if build/bin/kiln-compile --quiet --target=cuda --gpu-arch=$arch "$dir/model.onnx" -o "$out/$name-profile.kiln" \
      > "$out/$name-profile.log" 2>&1; then
    build/bin/kiln-run "$out/$name-profile.kiln" --test-data-dir "$dir/test_data_set_0" --quiet \
      --iterations 20 --warmup 3 --profile-summary >> "$out/$name-profile.log" 2>&1 || status=1
  else
    status=1
  fi
  {
    echo
    echo "### bench:$name"
    echo '```'
    head -30 "$out/$name-profile.log"
    echo '```'
  } >> "$report"
done

{
  echo
  echo "## Not checked"
  echo "- GB/s of each kernel: GPU kernels carry no flop or byte estimates yet (the profile has their times)."
  echo "- cuBLASLt's own time: products are not in the profile (only kiln's launches are)."
} >> "$report"
cat "$report"
exit $status
