#!/bin/sh
# Everything that needs an NVIDIA GPU, in one run, from the pack bench/gpu-pack.sh made on a build
# machine (the GPU machine needs no LLVM, no ONNX suite and no network: the driver, and Python with
# torch, numpy, onnx and ONNX Runtime for the anchors). Writes exactly two files:
#
#   OUT_DIR/gpu-report.md     summary table first (each check, required or reported, pass/fail, time)
#   OUT_DIR/gpu-logs.tar.xz   every log (per-test JSON reports, decode stats, sanitizer output, ...)
#
#   sh bench/gpu-check.sh [OUT_DIR]     (default $OUT on the device tool, else build/gpu-check)
#
# Required (exit status 1 if any fails): the CUDA conformance subset and kiln's own models against
# their references; greedy tokens of the test decoders in f32 (attention fused, unfused, split keys)
# equal to the x86 build's; the bench GPT's f32 outputs against ONNX Runtime's; the large decoder's
# f32 tokens equal to the x86 build's when the pack has its artifact. Reported only: fp16/bf16
# token agreement, the pointer-check pass (KILN_CUDA_CHECK_POINTERS=1), compute-sanitizer on two
# cases, timings against torch (eager and CUDA graph) on the same GPU, the HBM bound, profiles.
# A step whose tool is missing (torch, compute-sanitizer, --weights=external) says "not run".
#
# Environment: KILN_GPU_PACK (default build/gpu-pack.tar.xz), KILN_GPU_JOBS (parallel tests,
# default 16), KILN_CUDA_DRIVER (another driver library, e.g. the mock for a dry run here), KILN_GPU_PYTHON
# (default python3).
# Meant to end in under 6 minutes on an H200.
set -u
cd "$(dirname "$0")/.."
repo=$(pwd)
out=${1:-${OUT:-build/gpu-check}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
report=$out/gpu-report.md
jobs=${KILN_GPU_JOBS:-16}
packfile=${KILN_GPU_PACK:-build/gpu-pack.tar.xz}
T0=$(date +%s)
if [ ! -f "$packfile" ]; then
  echo "gpu-check: no pack at $packfile: run bench/gpu-pack.sh on a build machine and carry it" | tee "$report"
  exit 1
fi
work=$(mktemp -d /tmp/kiln-gpu-check.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
tar xJf "$packfile" -C "$work"
p=$work/gpu-pack
bin=$p/bin
export PATH="$PATH:/usr/local/cuda/bin"
py=${KILN_GPU_PYTHON:-python3}
# The driver (libcuda.so.1) and cuBLASLt through the loader path: the toolkit's copy, the driver's
# mount, and Python's nvidia-cublas wheel where there is one.
wheel=$($py -c 'import os, nvidia.cublas as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/nvidia/lib64${wheel:+:$wheel}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- bookkeeping: one row per check in $logs/summary.tsv, sections appended to $logs/body.md
summary=$logs/summary.tsv
body=$logs/body.md
timings=$logs/timings.tsv     # work \t kiln ms \t torch eager ms \t torch graph ms \t note
: > "$summary"; : > "$body"; : > "$timings"
trap 'trap - TERM INT; row "the check itself" required 0 1 FAIL "stopped by a signal (timeout?) during: $(tail -1 "$logs/steps" 2>/dev/null)"; finish; exit 124' TERM INT
step_t0=0
# ---- the report: summary table first, then the timing table, then the sections. Written again at
# the start of every step, so a run cut short (device time spent, `timeout`) still says what it found.
write_report() {
total=$(( $(date +%s) - T0 ))
req_fail=$(awk -F'\t' '$2 == "required" && ($6 != "pass") {n++} END {print n + 0}' "$summary")
{
  if [ "$req_fail" = 0 ]; then verdict="PASS: every required check passed"
  else verdict="FAIL: $req_fail required check(s) failed: $(awk -F'\t' '$2 == "required" && $6 != "pass" {printf "%s%s", s, $1; s = "; "}' "$summary")"; fi
  [ "${finished:-0}" = 1 ] || verdict="INCOMPLETE (cut short, or still running, during: $(tail -1 "$logs/steps" 2>/dev/null)); so far $verdict"
  echo "# kiln GPU check: $verdict"
  echo
  echo "| check | kind | pass | fail | time (s) | result | note |"
  echo "|---|---|---|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7}' "$summary"
  echo
  echo "Total $total s. Pack of commit $(head -1 "$p/COMMIT"), compiled for $(cat "$p/ARCH"); $(date -u +%Y-%m-%dT%H:%MZ)."
  echo "${KILN_CUDA_DRIVER:+Driver library: KILN_CUDA_DRIVER=$KILN_CUDA_DRIVER (not the GPU's driver: results mean nothing).}"
  echo
  echo '```'
  { nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>/dev/null || echo "nvidia-smi: not available"; } | head -3
  echo "cuBLASLt: $(ls /usr/local/cuda/lib64/libcublasLt.so.* ${wheel:+$wheel/libcublasLt.so.*} 2>/dev/null | head -1)"
  echo "torch: $($py -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null || echo none)"
  echo '```'
  echo
  echo "## Timings on this machine (medians; ratio = kiln / torch, below 1 is kiln faster)"
  echo
  echo "| work | kiln ms | torch eager ms | torch + CUDA graph ms | kiln/eager | kiln/graph | note |"
  echo "|---|---|---|---|---|---|---|"
  awk -F'\t' 'function r(a, b) { return (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) ? sprintf("%.2f", a / b) : "-" }
    {printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, r($2, $3), r($2, $4), $5}' "$timings"
  cat "$body"
} > "$report"
}

begin() { write_report; step_t0=$(date +%s); echo "[gpu-check] $1 (at $(( step_t0 - T0 )) s)"; echo "$1" >> "$logs/steps"; }
# KILN_GPU_SKIP: steps left out when device time is short (any of: pointer sanitizer torch large),
# reported as not run.
# KILN_GPU_BUDGET (seconds, default 420): optional steps that would start after it are left out too.
want() {
  case " ${KILN_GPU_SKIP:-} " in *" $1 "*) row "$1" reported 0 0 "not run" "KILN_GPU_SKIP"; return 1;; esac
  if [ $(( $(date +%s) - T0 )) -gt "${KILN_GPU_BUDGET:-420}" ]; then
    row "$1" reported 0 0 "not run" "the time budget (KILN_GPU_BUDGET=${KILN_GPU_BUDGET:-420} s) was spent"; return 1
  fi
}
# row NAME KIND(required|reported) PASS FAIL VERDICT [NOTE]
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$(( $(date +%s) - step_t0 ))" "$5" "${6:-}" >> "$summary"; }
section() { printf '\n## %s\n' "$1" >> "$body"; }
code() { { echo '```'; cat; echo '```'; } >> "$body"; }
json_field() { # FILE FIELD: a number from the last JSON stats line of FILE
  $py - "$1" "$2" <<'EOF' 2>/dev/null || echo "-"
import json, sys
v = "-"
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if line.startswith("{"):
        try:
            v = json.loads(line).get(sys.argv[2], v)
        except ValueError:
            pass
print(v)
EOF
}
e2e_counts() { # LOG -> "PASS FAIL" from run_onnx_tests.py's last line
  sed -n 's/^kiln-e2e: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$1" | tail -1
}

# The large decoder's weights (4.4 GB at full size): regenerated from the seed in the background
# while the GPU runs the suite; checked against the pack's weights.sha256 in step 9.
large=$work/large
large_pid=
if [ -f "$p/large/ARGS" ] && case " ${KILN_GPU_SKIP:-} " in *" large "*) false;; esac && $py -c 'import numpy, onnx' 2>/dev/null; then
  # shellcheck disable=SC2046
  ( $py bench/gpu/make_large_decoder.py $(cat "$p/large/ARGS") --out "$large" --check "$p/large/weights.sha256" \
      > "$logs/large-weights.log" 2>&1; echo $? > "$logs/large-weights.rc" ) &
  large_pid=$!
fi

# ---- 1. conformance subset and own models (required)
begin "conformance subset"
$py test/e2e/run_onnx_tests.py --bin "$bin" --prebuilt --root "$p/suite" --list "$p/suite.txt" -j "$jobs" \
  --rtol 1e-3 --atol 1e-7 --run-timeout 60 --report "$logs/conformance.json" > "$logs/conformance.log" 2>&1
rc=$?
set -- $(e2e_counts "$logs/conformance.log") 0 0
[ $rc = 0 ] && row "CUDA conformance subset" required "$1" "$2" pass || row "CUDA conformance subset" required "$1" "$2" FAIL "runner rc $rc"
begin "own models"
$py test/e2e/run_onnx_tests.py --bin "$bin" --prebuilt --root "$p/own" --list "$p/own.txt" -j "$jobs" \
  --atol 1e-4 --run-timeout 60 --report "$logs/own-models.json" > "$logs/own-models.log" 2>&1
rc=$?
set -- $(e2e_counts "$logs/own-models.log") 0 0
[ $rc = 0 ] && row "own models" required "$1" "$2" pass || row "own models" required "$1" "$2" FAIL "runner rc $rc"
section "Conformance subset and own models"
{
  grep -E "^(kiln e2e|kiln-e2e|  [a-z])" "$logs/conformance.log"
  grep "^FAIL" "$logs/conformance.log" | head -30
  echo "own models:"
  grep -E "^(kiln e2e|kiln-e2e|  [a-z])" "$logs/own-models.log"
  grep "^FAIL" "$logs/own-models.log" | head -30
} | code

# ---- 2. decoders: f32 tokens equal to x86's (required), fp16/bf16 agreement (reported)
begin "decoders"
decode() { # LM VARIANT N [env...]: runs prompt N, leaves $logs/dec/LM-VARIANT-N.{tokens,stats}, returns rc
  lm=$1 v=$2 n=$3
  shift 3
  prompt=$(sed -n "${n}p" "$p/lm/prompts.txt")
  # shellcheck disable=SC2086
  env "$@" timeout 60 "$bin/kiln-run" generate "$p/lm/$lm-$v.kiln" $prompt --ids --max-new-tokens 48 --stats \
    > "$dec/$lm-$v-$n${tag:-}.tokens" 2> "$dec/$lm-$v-$n${tag:-}.stats"
}
dec=$logs/dec
mkdir -p "$dec"
f32_pass=0 f32_fail=0 half_same=0 half_diff=0 half_err=0
: > "$logs/decode-lines.txt"
for lm in gpt2 llama; do
  for v in fused unfused split paged pagedsplit fp16 bf16; do
    for n in 1 2 3 4; do
      # The long prompts (3, 4) for the splits; the short ones (1, 2) for the rest.
      case $v in *split) [ $n -ge 3 ] || continue ;; *) [ $n -le 2 ] || continue ;; esac
      tag= decode $lm $v $n
      rc=$?
      f=$dec/$lm-$v-$n
      st="ms/token $(json_field "$f.stats" inter_token_median_ms), ttft $(json_field "$f.stats" time_to_first_token_ms) ms"
      same=0
      [ $rc = 0 ] && cmp -s "$f.tokens" "$p/lm/$lm-prompt$n.x86" && same=1
      case $v in
        fp16|bf16)
          if [ $same = 1 ]; then half_same=$((half_same + 1)); echo "ok   $lm $v prompt $n: same tokens; $st"
          elif [ $rc = 0 ]; then half_diff=$((half_diff + 1)); echo "note $lm $v prompt $n: tokens differ from f32 x86 (reported); $st"
          else half_err=$((half_err + 1)); echo "FAIL $lm $v prompt $n (rc $rc): $(tail -1 "$f.stats")"; fi ;;
        *)
          if [ $same = 1 ]; then f32_pass=$((f32_pass + 1)); echo "ok   $lm $v prompt $n: same tokens; $st"
          else
            f32_fail=$((f32_fail + 1))
            echo "FAIL $lm $v prompt $n (rc $rc): got $(tr '\n' ' ' < "$f.tokens" | head -c 100) want $(tr '\n' ' ' < "$p/lm/$lm-prompt$n.x86" | head -c 100) | $(tail -1 "$f.stats" | head -c 300)"
          fi ;;
      esac >> "$logs/decode-lines.txt"
    done
  done
done
# The same steps without graphs (KILN_CUDA_GRAPHS=0: every kernel launched from the host), for the
# timing table: decode steps are step graphs by default (docs/cuda.md), and whether node updates
# plus one graph launch beat launching every kernel is what a GPU must show.
for lm in gpt2 llama; do
  tag=-eager decode $lm fused 1 KILN_CUDA_GRAPHS=0
  cmp -s "$dec/$lm-fused-1-eager.tokens" "$p/lm/$lm-prompt1.x86" ||
    echo "FAIL $lm fused prompt 1 with KILN_CUDA_GRAPHS=0: tokens differ from x86 | $(tail -1 "$dec/$lm-fused-1-eager.stats" | head -c 300)" >> "$logs/decode-lines.txt"
done
# int8/int4 weights (reported): tokens against the x86 build quantized the same way, ms/token.
q_same=0 q_diff=0
for lm in gpt2 llama; do
  for q in int8 int4; do
    for n in 1 2; do
      [ -f "$p/lm/$lm-$q.kiln" ] || continue
      tag= decode $lm $q $n
      rc=$?
      f=$dec/$lm-$q-$n
      if [ $rc = 0 ] && cmp -s "$f.tokens" "$p/lm/$lm-prompt$n-$q.x86"; then
        q_same=$((q_same + 1)); echo "ok   $lm $q prompt $n: same tokens as x86 $q; ms/token $(json_field "$f.stats" inter_token_median_ms)"
      else
        q_diff=$((q_diff + 1)); echo "FAIL $lm $q prompt $n (rc $rc): got $(tr '\n' ' ' < "$f.tokens" | head -c 100) want $(tr '\n' ' ' < "$p/lm/$lm-prompt$n-$q.x86" | head -c 100) | $(tail -1 "$f.stats" | head -c 300)"
      fi >> "$logs/decode-lines.txt"
    done
  done
done
row "decoders int8/int4 tokens = x86 int8/int4" reported $q_same $q_diff reported
[ $f32_fail = 0 ] && row "decoders f32 tokens = x86 (fused, unfused, split, paged)" required $f32_pass $f32_fail pass ||
  row "decoders f32 tokens = x86 (fused, unfused, split, paged)" required $f32_pass $f32_fail FAIL
row "decoders fp16/bf16 tokens = x86 f32" reported $half_same $((half_diff + half_err)) reported "$half_diff differ, $half_err errors"
section "Decoding: greedy tokens against the x86 build (48 new tokens)"
code < "$logs/decode-lines.txt"

# ---- 3. bench models: outputs against ONNX Runtime's (GPT f32 required), latency, profiles
begin "bench models"
: > "$logs/bench-lines.txt"
for name in $(ls "$p/bench"); do
  dir=$p/bench/$name
  tol="--atol 1e-3 --rtol 1e-3"
  case $name in bert-bf16*) tol="--atol 5e-2 --rtol 5e-2" ;; esac
  # shellcheck disable=SC2086
  timeout 60 "$bin/kiln-run" "$dir/model.kiln" --test-data-dir "$dir/test_data_set_0" --quiet $tol > "$logs/$name.check" 2>&1
  rc=$?
  timeout 60 "$bin/kiln-run" "$dir/model.kiln" --test-data-dir "$dir/test_data_set_0" --quiet --iterations 50 --warmup 5 \
    > "$logs/$name.latency" 2>&1
  timeout 60 "$bin/kiln-run" "$dir/model.kiln" --test-data-dir "$dir/test_data_set_0" --quiet --iterations 20 --warmup 3 \
    --profile-summary > "$logs/$name-profile.log" 2>&1
  if [ $name = gpt-fp32 ]; then
    [ $rc = 0 ] && row "bench GPT f32 outputs = ONNX Runtime's" required 1 0 pass ||
      row "bench GPT f32 outputs = ONNX Runtime's" required 0 1 FAIL "$(grep -i -m1 -E 'mismatch|error' "$logs/$name.check")"
  fi
  verdict="outputs ok"
  [ $rc = 0 ] || verdict="OUTPUTS DIFFER (rc $rc): $(grep -i -m1 -E 'mismatch|error' "$logs/$name.check")"
  # Kernel launches per run (cuBLASLt products not counted): the host's share of a forward.
  launches=$(awk '/^profile:/ { runs = $2 } /main_kernel/ { n += $3 } END { if (runs) printf "%d", n / runs; else printf "?" }' \
    "$logs/$name-profile.log")
  echo "kiln $name: $verdict; $(grep latency_ms "$logs/$name.latency" || tail -1 "$logs/$name.latency"); $launches kernel launches per run" >> "$logs/bench-lines.txt"
done
# As torch is timed: inputs and outputs kept on the GPU (no copy to or from the host in a run).
timeout 60 "$bin/kiln-run" "$p/bench/gpt-fp32/model.kiln" --test-data-dir "$p/bench/gpt-fp32/test_data_set_0" \
  --quiet --iterations 50 --warmup 5 --device-io > "$logs/gpt-fp32-device-io.latency" 2>&1
echo "kiln gpt-fp32 --device-io: $(grep -E 'latency_ms|MISMATCH|error' "$logs/gpt-fp32-device-io.latency" | tr '\n' ' ')" >> "$logs/bench-lines.txt"
KILN_CUBLASLT=none timeout 60 "$bin/kiln-run" "$p/bench/gpt-fp32/model.kiln" --test-data-dir "$p/bench/gpt-fp32/test_data_set_0" \
  --quiet --iterations 3 --warmup 1 > "$logs/gpt-no-cublaslt.latency" 2>&1
echo "kiln gpt-fp32 with KILN_CUBLASLT=none: $(grep latency_ms "$logs/gpt-no-cublaslt.latency" || tail -1 "$logs/gpt-no-cublaslt.latency")" >> "$logs/bench-lines.txt"
nb=$(grep -c "^kiln bert" "$logs/bench-lines.txt")
nbf=$(grep -c "^kiln bert.*OUTPUTS DIFFER" "$logs/bench-lines.txt")
row "bench BERT bf16 outputs = ONNX Runtime's" reported $((nb - nbf)) "$nbf" reported "profiles in the log tarball"
section "Bench models: outputs against ONNX Runtime's, latency (50 runs)"
code < "$logs/bench-lines.txt"
for name in gpt-fp32 bert-bf16-fused; do
  printf '\n### Profile: %s (top 12 kernels; the full one in the tarball)\n' "$name" >> "$body"
  head -14 "$logs/$name-profile.log" | code
done

# ---- 4. pointer check (reported): own models and decoders with KILN_CUDA_CHECK_POINTERS=1
if want pointer; then
begin "pointer check"
KILN_CUDA_CHECK_POINTERS=1 $py test/e2e/run_onnx_tests.py --bin "$bin" --prebuilt --root "$p/own" --list "$p/own.txt" \
  -j "$jobs" --atol 1e-4 --run-timeout 120 --report "$logs/pointer-check-own.json" > "$logs/pointer-check-own.log" 2>&1
set -- $(e2e_counts "$logs/pointer-check-own.log") 0 0
pc_pass=$1 pc_fail=$2
: > "$logs/pointer-check-decoders.txt"
for lm in gpt2 llama; do
  for v in fused unfused split paged pagedsplit; do
    n=1; case $v in *split) n=3 ;; esac
    tag=-pointers decode $lm $v $n KILN_CUDA_CHECK_POINTERS=1
    rc=$?
    if [ $rc = 0 ]; then pc_pass=$((pc_pass + 1)); echo "ok   $lm $v prompt $n"
    else pc_fail=$((pc_fail + 1)); echo "FAIL $lm $v prompt $n (rc $rc): $(tail -1 "$dec/$lm-$v-$n-pointers.stats")"; fi \
      >> "$logs/pointer-check-decoders.txt"
  done
done
row "pointer check (KILN_CUDA_CHECK_POINTERS=1): own models + decoders" reported $pc_pass $pc_fail reported \
  "$(grep -l -i pointer "$dec"/*-pointers.stats 2>/dev/null | wc -l) decodes name a pointer"
section "Pointer check: KILN_CUDA_CHECK_POINTERS=1 on the own models and the f32 decoders"
{
  grep -E "^(kiln-e2e|  [a-z])" "$logs/pointer-check-own.log"
  grep "^FAIL" "$logs/pointer-check-own.log" | head -15
  cat "$logs/pointer-check-decoders.txt"
} | code

fi
# ---- 5. compute-sanitizer (reported), each case under 60 s
if want sanitizer; then
begin "compute-sanitizer"
san=$(command -v compute-sanitizer || true)
section "compute-sanitizer (memcheck; full output in the tarball)"
for case in conv2d llama-decode; do
  if [ -z "$san" ]; then
    row "compute-sanitizer: $case" reported 0 0 "not run" "no compute-sanitizer on PATH"; continue
  fi
  step_t0=$(date +%s)
  if [ $case = conv2d ]; then
    t=$p/suite/pytorch-converted/test_Conv2d_strided
    timeout 60 "$san" --print-limit 20 "$bin/kiln-run" "$t/model.kiln" --test-data-dir "$t/test_data_set_0" --quiet \
      > "$logs/sanitizer-$case.txt" 2>&1
  else
    timeout 60 "$san" --print-limit 20 "$bin/kiln-run" generate "$p/lm/llama-fused.kiln" --prompt-ids 1,2,3,4,5 --ids \
      --max-new-tokens 8 > "$logs/sanitizer-$case.txt" 2>&1
  fi
  rc=$?
  errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$logs/sanitizer-$case.txt" | head -1)
  note="rc $rc"
  [ $rc = 124 ] && note="timed out after 60 s"
  if [ -n "$errs" ]; then
    [ "$errs" = 0 ] && row "compute-sanitizer: $case" reported 1 0 "0 errors" "$note" || row "compute-sanitizer: $case" reported 0 1 "$errs errors" "$note"
  else
    row "compute-sanitizer: $case" reported 0 1 "no summary" "$note"
  fi
  { echo "$case: ${errs:-no} error summary ($note)"; grep -m3 -E "Invalid|out of bounds|nearest allocation" "$logs/sanitizer-$case.txt"; } | code
done

fi
# ---- 6-8. timings against torch on this GPU (reported)
if want torch; then
begin "timings against torch"
torch_ok=0
if $py -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' > "$logs/torch-probe.log" 2>&1; then
  torch_ok=1
else
  torch_why="no torch with CUDA ($(tail -1 "$logs/torch-probe.log" | head -c 120))"
fi
result() { # FILE KIND DTYPE FIELD
  sed -n "s/^RESULT $2 $3 .*$4=\([0-9.]*\).*/\1/p" "$1" | tail -1
}
gpt_kiln=$(sed -n 's/.*latency_ms median=\([0-9.]*\).*/\1/p' "$logs/gpt-fp32.latency" | head -1)
gpt_dev=$(sed -n 's/.*latency_ms median=\([0-9.]*\).*/\1/p' "$logs/gpt-fp32-device-io.latency" | head -1)
gpt_e=- gpt_g=- ll_e=- ll_g=-
if [ $torch_ok = 1 ]; then
  timeout 90 $py bench/gpu/gpt_torch.py --dtypes f32 > "$logs/torch-gpt.log" 2>&1
  gpt_e=$(result "$logs/torch-gpt.log" gpt f32 eager_ms); gpt_g=$(result "$logs/torch-gpt.log" gpt f32 graph_ms)
  timeout 90 $py bench/gpu/llama_torch.py --config test/models/lm/llama/generation.json --ffn 172 --dtypes f32 \
    > "$logs/torch-tiny-llama.log" 2>&1
  ll_e=$(result "$logs/torch-tiny-llama.log" llama f32 eager_ms); ll_g=$(result "$logs/torch-tiny-llama.log" llama f32 graph_ms)
fi
printf 'bench GPT forward, seq 128, f32\t%s\t%s\t%s\t%s\n' "${gpt_kiln:--}" "${gpt_e:--}" "${gpt_g:--}" "kiln-run median of 50, inputs from and outputs to the host" >> "$timings"
printf 'bench GPT forward, seq 128, f32, tensors on the GPU\t%s\t%s\t%s\t%s\n' "${gpt_dev:--}" "${gpt_e:--}" "${gpt_g:--}" "kiln-run --device-io median of 50 (as torch is timed)" >> "$timings"
printf 'test gpt2 decode, ms/token, f32 fused\t%s\t-\t-\t%s\n' "$(json_field "$dec/gpt2-fused-1.stats" inter_token_median_ms)" "no torch anchor for this shape" >> "$timings"
printf 'test llama decode, ms/token, f32 fused\t%s\t%s\t%s\t%s\n' "$(json_field "$dec/llama-fused-1.stats" inter_token_median_ms)" "${ll_e:--}" "${ll_g:--}" "torch: one step at position 64" >> "$timings"
for lm in gpt2 llama; do
  for q in int8 int4; do
    printf 'test %s decode, ms/token, %s weights\t%s\t-\t-\t%s\n' $lm $q "$(json_field "$dec/$lm-$q-1.stats" inter_token_median_ms)" "one reduction per output column (docs/cuda.md)" >> "$timings"
  done
done
printf 'test gpt2 decode, ms/token, f32 fused, steps eager\t%s\t-\t-\t%s\n' "$(json_field "$dec/gpt2-fused-1-eager.stats" inter_token_median_ms)" "KILN_CUDA_GRAPHS=0 (the row above: step graphs)" >> "$timings"
printf 'test llama decode, ms/token, f32 fused, steps eager\t%s\t-\t-\t%s\n' "$(json_field "$dec/llama-fused-1-eager.stats" inter_token_median_ms)" "KILN_CUDA_GRAPHS=0 (the row above: step graphs)" >> "$timings"
if [ $torch_ok = 1 ]; then
  n=$(grep -c '^RESULT' "$logs/torch-gpt.log" "$logs/torch-tiny-llama.log" | awk -F: '{s += $2} END {print s + 0}')
  row "torch anchors (GPT, test llama)" reported "$n" $((2 - n)) reported
else
  row "torch anchors (GPT, test llama)" reported 0 0 "not run" "$torch_why"
fi

fi
# ---- 9. the large decoder (TinyLlama-1.1B shapes)
if want large; then
begin "large decoder"
section "Large decoder (TinyLlama-1.1B shapes: $(tr '\n' ' ' < "$p/large/ARGS" 2>/dev/null))"
lnote=$(cat "$p/large/NOTE" 2>/dev/null || echo "no large decoder in the pack")
echo "pack: $lnote" | code
wbytes=- hbm=-
if [ $torch_ok = 1 ] && [ -f "$p/large/generation.json" ]; then
  timeout 120 $py bench/gpu/llama_torch.py --config "$p/large/generation.json" --dtypes fp16,f32 > "$logs/torch-large.log" 2>&1
fi
if [ -n "$large_pid" ]; then
  wait "$large_pid"
  tail -3 "$logs/large-weights.log" | code
  if [ "$(cat "$logs/large-weights.rc" 2>/dev/null)" = 0 ]; then
    row "large decoder weights regenerated, sha256 = pack's" reported 1 0 pass
  else
    row "large decoder weights regenerated, sha256 = pack's" reported 0 1 FAIL "$(tail -1 "$logs/large-weights.log" | head -c 200)"
  fi
else
  row "large decoder weights regenerated, sha256 = pack's" reported 0 0 "not run" "no large decoder in the pack, or no numpy/onnx"
fi
for dt in f32 fp16; do
  kms=-
  if [ -f "$p/large/$dt.kiln" ] && [ -f "$work/large/model.onnx.data" ] && [ "$(cat "$logs/large-weights.rc" 2>/dev/null)" = 0 ]; then
    timeout 120 "$bin/kiln-run" generate "$p/large/$dt.kiln" --weights-dir "$work/large" --prompt-ids "$(cat "$p/large/prompt.txt")" \
      --ids --max-new-tokens 16 --stats > "$logs/large-$dt.tokens" 2> "$logs/large-$dt.stats"
    kms=$(json_field "$logs/large-$dt.stats" inter_token_median_ms)
  fi
  te=- tg=-
  if [ -f "$logs/torch-large.log" ]; then
    te=$(result "$logs/torch-large.log" llama $dt eager_ms); tg=$(result "$logs/torch-large.log" llama $dt graph_ms)
    wb=$(result "$logs/torch-large.log" llama $dt weight_bytes); hb=$(result "$logs/torch-large.log" llama $dt hbm_bound_ms)
  fi
  printf 'large decoder decode, ms/token, %s\t%s\t%s\t%s\t%s\n' "$dt" "$kms" "${te:--}" "${tg:--}" \
    "HBM bound ${hb:--} ms (${wb:--} weight bytes / 4.8 TB/s)" >> "$timings"
done
if [ ! -f "$p/large/f32.kiln" ]; then
  row "large decoder f32 tokens = x86" "required if packed" 0 0 "not run" "$lnote"
elif [ "$(cat "$logs/large-weights.rc" 2>/dev/null)" != 0 ]; then
  row "large decoder f32 tokens = x86" required 0 1 FAIL "weights not regenerated or checksum differs (large-weights.log)"
elif [ ! -f "$p/large/x86.tokens" ]; then
  row "large decoder f32 tokens = x86" "required if packed" 0 0 "not run" "the pack has no x86 tokens: $lnote"
elif cmp -s "$logs/large-f32.tokens" "$p/large/x86.tokens"; then
  row "large decoder f32 tokens = x86" required 1 0 pass
else
  row "large decoder f32 tokens = x86" required 0 1 FAIL "$(tail -1 "$logs/large-f32.stats" | head -c 200)"
fi
if [ -f "$p/large/fp16.kiln" ] && [ -f "$logs/large-fp16.tokens" ] && [ -f "$p/large/x86.tokens" ]; then
  cmp -s "$logs/large-fp16.tokens" "$p/large/x86.tokens" && row "large decoder fp16 tokens = x86 f32" reported 1 0 reported ||
    row "large decoder fp16 tokens = x86 f32" reported 0 1 reported
fi
if [ $torch_ok = 1 ]; then
  row "torch anchor, large decoder (fp16, f32)" reported "$(grep -c '^RESULT' "$logs/torch-large.log")" \
    $((2 - $(grep -c '^RESULT' "$logs/torch-large.log"))) reported
else
  row "torch anchor, large decoder (fp16, f32)" reported 0 0 "not run" "$torch_why"
fi

fi
finish() {
finished=1
write_report
cp "$summary" "$timings" "$logs/" 2>/dev/null
tar cJf "$out/gpu-logs.tar.xz" -C "$work" logs
rm -rf "$work"
cat "$report"
echo "[gpu-check] $report and $out/gpu-logs.tar.xz in $total s"
}
finish
[ "$req_fail" = 0 ]
