#!/bin/sh
# Everything that needs an NVIDIA GPU, in one run, from the pack bench/gpu-pack.sh made on a build
# machine (the GPU machine needs no LLVM, no ONNX suite and no network: only the driver, and
# Python with ONNX Runtime for the side-by-side timings). It checks the CUDA conformance subset
# and kiln's own models against their reference outputs; greedy decoding of the two test decoders
# against the x86 build's tokens (attention fused, unfused, with split keys; fp16 and bf16
# reported); the bench GPT (f32) and BERT (bf16, attention fused and unfused) against ONNX
# Runtime's outputs, with latencies next to ONNX Runtime (CPU, the GPU machine's Python package)
# in the same run; and the kernels' profiles. Writes OUT_DIR/report.md.
#
#   sh bench/gpu-check.sh [OUT_DIR]     (default build/gpu-check, or $OUT/gpu-check on the device tool)
#
# Environment: KILN_GPU_PACK (default build/gpu-pack.tar.xz), KILN_GPU_JOBS (parallel tests,
# default 16). Exit status 0 only if every required check passed. Meant to end in under 8 minutes
# on an H200.
set -u
cd "$(dirname "$0")/.."
out=${1:-${OUT:+$OUT/gpu-check}}
out=${out:-build/gpu-check}
mkdir -p "$out"
report=$out/report.md
status=0
jobs=${KILN_GPU_JOBS:-16}
packfile=${KILN_GPU_PACK:-build/gpu-pack.tar.xz}
if [ ! -f "$packfile" ]; then
  echo "gpu-check: no pack at $packfile: run bench/gpu-pack.sh on a build machine and carry it" | tee "$report"
  exit 1
fi
work=$(mktemp -d /tmp/kiln-gpu-check.XXXXXX)
tar xJf "$packfile" -C "$work"
p=$work/gpu-pack
bin=$p/bin
export PATH="$PATH:/usr/local/cuda/bin"
py=python3
# The driver (libcuda.so.1) and cuBLASLt, which serves the matrix products, through the loader
# path: the toolkit's copy, the driver's mount, and Python's nvidia-cublas wheel where there is one.
wheel=$($py -c 'import os, nvidia.cublas as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/nvidia/lib64${wheel:+:$wheel}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "# kiln GPU check ($(date -u +%Y-%m-%dT%H:%MZ), pack of commit $(cat "$p/COMMIT"), compiled for $(cat "$p/ARCH"))"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 | head -3
  echo "cuBLASLt: $(ls /usr/local/cuda/lib64/libcublasLt.so.* ${wheel:+$wheel/libcublasLt.so.*} 2>/dev/null | head -1)"
  echo '```'
} > "$report"

# 1. The CUDA conformance subset and kiln's own models on the GPU, against their reference outputs
#    (the suite's tolerances as on x86; own models 1e-4).
echo "[gpu-check] conformance on the GPU"
$py test/e2e/run_onnx_tests.py --bin "$bin" --prebuilt --root "$p/suite" --list "$p/suite.txt" -j "$jobs" \
  --rtol 1e-3 --atol 1e-7 --run-timeout 300 --report "$out/conformance.json" > "$out/conformance.log" 2>&1 || status=1
$py test/e2e/run_onnx_tests.py --bin "$bin" --prebuilt --root "$p/own" --list "$p/own.txt" -j "$jobs" \
  --atol 1e-4 --run-timeout 300 --report "$out/own-models.json" > "$out/own-models.log" 2>&1 || status=1
{
  echo
  echo "## Conformance on the GPU"
  echo '```'
  grep -E "^(kiln-e2e|  [a-z])" "$out/conformance.log"
  grep "^FAIL" "$out/conformance.log" | head -20
  echo "kiln's own models:"
  grep -E "^(kiln-e2e|  [a-z])" "$out/own-models.log"
  grep "^FAIL" "$out/own-models.log" | head -20
  echo '```'
} >> "$report"

# 2. Decoding on the GPU: greedy tokens equal to the x86 build's in f32, whatever the attention
#    form; half precision reported (random tiny models have near-ties that rounding flips).
echo "[gpu-check] decoding"
{
  echo
  echo "## Decoding: greedy tokens against the x86 build (48 new tokens)"
  echo '```'
} >> "$report"
for lm in gpt2 llama; do
  for variant in fused unfused split fp16 bf16; do
    n=0
    while read -r prompt; do
      n=$((n + 1))
      # The long prompts are for the split; the short ones for the rest.
      if [ $variant = split ]; then [ $n -ge 3 ] || continue; else [ $n -le 2 ] || continue; fi
      # shellcheck disable=SC2086
      "$bin/kiln-run" generate "$p/lm/$lm-$variant.kiln" $prompt --ids --max-new-tokens 48 --stats \
        > "$out/$lm-$variant-$n.tokens" 2> "$out/$lm-$variant-$n.stats"
      rc=$?
      stats=$(tail -1 "$out/$lm-$variant-$n.stats")
      if [ $rc -eq 0 ] && cmp -s "$out/$lm-$variant-$n.tokens" "$p/lm/$lm-prompt$n.x86"; then
        echo "ok   $lm $variant prompt $n: same tokens; $stats" >> "$report"
      elif [ $rc -eq 0 ] && { [ $variant = fp16 ] || [ $variant = bf16 ]; }; then
        echo "note $lm $variant prompt $n: tokens differ from f32 x86 (reported, not required); $stats" >> "$report"
      else
        echo "FAIL $lm $variant prompt $n (rc $rc): got $(tr '\n' ' ' < "$out/$lm-$variant-$n.tokens" | head -c 120) want $(tr '\n' ' ' < "$p/lm/$lm-prompt$n.x86" | head -c 120) | $(tail -1 "$out/$lm-$variant-$n.stats")" >> "$report"
        status=1
      fi
    done < "$p/lm/prompts.txt"
  done
done
echo '```' >> "$report"

# 3. The bench models on the GPU: outputs against ONNX Runtime's (f32 GPT: required; bf16 BERT:
#    reported), latency next to ONNX Runtime (CPU) on the same architecture, in the same run.
echo "[gpu-check] bench models"
{
  echo
  echo "## Bench models: kiln on the GPU, ONNX Runtime (CPU) on the same model"
  echo '```'
} >> "$report"
# ONNX Runtime's side: the models regenerated here by the same generator (their weights come from
# this machine's numpy: the same shapes and work, perhaps other values).
ortdir=$work/ort-models
ort_ok=0
if $py -c "import onnxruntime, onnx, numpy" 2>/dev/null &&
   $py bench/models/gen_bench_models.py --no-reference --out "$ortdir" bert gpt > "$out/ort-models.log" 2>&1; then
  ort_ok=1
else
  echo "ONNX Runtime side: not available here ($(tail -1 "$out/ort-models.log" 2>/dev/null))" >> "$report"
fi
for name in gpt-fp32 bert-bf16-fused bert-bf16-unfused; do
  dir=$p/bench/$name
  tol="--atol 1e-3 --rtol 1e-3"
  case $name in bert-bf16*) tol="--atol 5e-2 --rtol 5e-2" ;; esac
  # shellcheck disable=SC2086
  "$bin/kiln-run" "$dir/model.kiln" --test-data-dir "$dir/test_data_set_0" --quiet $tol > "$out/$name.check" 2>&1
  rc=$?
  "$bin/kiln-run" "$dir/model.kiln" --test-data-dir "$dir/test_data_set_0" --quiet --iterations 50 --warmup 5 \
    > "$out/$name.latency" 2>&1
  verdict="outputs ok"
  if [ $rc -ne 0 ]; then
    verdict="OUTPUTS DIFFER: $(grep -i -m1 -E 'mismatch|error' "$out/$name.check")"
    case $name in gpt-fp32) status=1 ;; *) verdict="$verdict (bf16: reported)" ;; esac
  fi
  echo "kiln $name: $verdict; $(grep latency_ms "$out/$name.latency" || tail -1 "$out/$name.latency")" >> "$report"
done
if [ $ort_ok = 1 ]; then
  for name in gpt bert; do
    $py - "$ortdir/$name/model.onnx" "$p/bench/$([ $name = gpt ] && echo gpt-fp32 || echo bert-bf16-fused)/test_data_set_0" \
      >> "$report" 2>&1 <<'EOF' || echo "ORT $name: failed" >> "$report"
import glob, os, statistics, sys, time
import onnx, onnxruntime as ort
from onnx import numpy_helper
model, ds = sys.argv[1], sys.argv[2]
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
feeds = {}
for path in sorted(glob.glob(os.path.join(ds, "input_*.pb"))):
    t = onnx.TensorProto()
    t.ParseFromString(open(path, "rb").read())
    feeds[t.name] = numpy_helper.to_array(t)
for _ in range(5):
    sess.run(None, feeds)
times = []
for _ in range(50):
    t0 = time.perf_counter()
    sess.run(None, feeds)
    times.append((time.perf_counter() - t0) * 1e3)
times.sort()
print("ORT (CPU, %d threads, onnxruntime %s) %s: latency_ms median=%.4f p90=%.4f min=%.4f" % (
    os.cpu_count(), ort.__version__, os.path.basename(os.path.dirname(model)), statistics.median(times),
    times[int(0.9 * len(times))], times[0]))
EOF
  done
fi
# The GPT with kiln's own product kernels instead of cuBLASLt: what the library buys.
KILN_CUBLASLT=none "$bin/kiln-run" "$p/bench/gpt-fp32/model.kiln" --test-data-dir "$p/bench/gpt-fp32/test_data_set_0" \
  --quiet --iterations 10 --warmup 2 > "$out/gpt-no-cublaslt.latency" 2>&1
echo "kiln gpt-fp32 with KILN_CUBLASLT=none: $(grep latency_ms "$out/gpt-no-cublaslt.latency" || tail -1 "$out/gpt-no-cublaslt.latency")" >> "$report"
echo '```' >> "$report"

# 4. Where the time goes: kiln's launches by total time (CUDA events; cuBLASLt's products are not
#    kiln's launches and do not appear).
echo "[gpu-check] profiles"
{
  echo
  echo "## Profiles: kiln's kernels by total time (20 runs after 3 warm-up runs)"
} >> "$report"
for name in gpt-fp32 bert-bf16-fused bert-bf16-unfused; do
  dir=$p/bench/$name
  "$bin/kiln-run" "$dir/model.kiln" --test-data-dir "$dir/test_data_set_0" --quiet --iterations 20 --warmup 3 \
    --profile-summary > "$out/$name-profile.log" 2>&1 || status=1
  {
    echo
    echo "### $name"
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
  echo "- The ResNet and MLP bench models (not in the pack: their weights do not fit what travels)."
} >> "$report"
rm -rf "$work"
cat "$report"
exit $status
