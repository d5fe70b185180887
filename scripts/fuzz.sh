#!/bin/sh
# Runs one fuzz target for a given time:  sh scripts/fuzz.sh TARGET SECONDS
# TARGET: fuzz_model | fuzz_model_dir | fuzz_artifact | fuzz_request | fuzz_tokenizer | all
# Builds build-asan/ (ASan+UBSan+libFuzzer) when needed, seeds the working corpus
# build-asan/fuzz/corpus/TARGET from the ONNX suite and kiln's models, also reads the saved
# regressions in test/fuzz/corpus/TARGET, and writes crashing inputs to build-asan/fuzz/findings/.
# A finding worth keeping goes into test/fuzz/corpus/TARGET (replayed by ctest) once fixed.
# KILN_FUZZ_CPU=1 makes SECONDS a budget of CPU time (user+sys of the fuzzer process), not wall
# time: on a shared machine wall time overstates the work done. The fuzzer is stopped with SIGINT
# once it has used that much CPU, so libFuzzer still prints its final stats.
# KILN_FUZZ_SEED (default 1) seeds libFuzzer's mutations, so that a CI run explores the same inputs
# every time and a failure it finds reproduces; set it to 0 for a random seed when fuzzing by hand.
set -e
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz.sh TARGET SECONDS}
seconds=${2:?usage: fuzz.sh TARGET SECONDS}
if [ "$target" = all ]; then
  # fuzz_model first replays its whole seed corpus (1,262 models, ~240 s under ASan) before its
  # SECONDS of fuzzing: the other targets run meanwhile, one after another, on the second core.
  [ -n "$KILN_FUZZ_NO_BUILD" ] || sh scripts/sanitize-build.sh
  KILN_FUZZ_NO_BUILD=1 sh scripts/fuzz.sh fuzz_model "$seconds" &
  model=$!
  rc=0
  for t in fuzz_model_dir fuzz_artifact fuzz_request fuzz_tokenizer; do
    KILN_FUZZ_NO_BUILD=1 sh scripts/fuzz.sh "$t" "$seconds" || rc=1
  done
  wait "$model" || rc=1
  exit $rc
fi
[ -n "$KILN_FUZZ_NO_BUILD" ] || sh scripts/sanitize-build.sh
bin=build-asan/bin/$target
[ -x "$bin" ] || { echo "fuzz.sh: no $bin"; exit 1; }
work=build-asan/fuzz
mkdir -p "$work/corpus/$target" "$work/findings/$target" "$work/logs" "test/fuzz/corpus/$target"
if [ -z "$(ls -A "$work/corpus/$target")" ]; then
  python3 test/fuzz/make_seeds.py "$target" "$work/corpus/$target"
fi
log=$work/logs/$target.log
echo "[fuzz] $target for ${seconds}s (log: $log)"
rc=0
. scripts/sanitizer-env.sh
wall=$seconds
[ -z "$KILN_FUZZ_CPU" ] || wall=$((seconds * 50)) # the CPU watcher below stops it first
start=$(date +%s)
"$bin" -seed="${KILN_FUZZ_SEED:-1}" -max_total_time="$wall" -timeout=10 -rss_limit_mb=4096 -max_len=262144 \
-print_final_stats=1 -artifact_prefix="$work/findings/$target/" \
"$work/corpus/$target" "test/fuzz/corpus/$target" >"$log" 2>&1 &
pid=$!
cpu=0
tick=$(getconf CLK_TCK)
while kill -0 "$pid" 2>/dev/null; do
  # Fields 14 and 15 of /proc/PID/stat: user and system time in clock ticks (all threads).
  t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
  cpu=$((t / tick))
  if [ -n "$KILN_FUZZ_CPU" ] && [ "$cpu" -ge "$seconds" ]; then kill -INT "$pid"; break; fi
  sleep 5
done
wait "$pid" || rc=$?
# libFuzzer exits 72 after SIGINT (-interrupted_exitcode): that is the budget running out.
[ -z "$KILN_FUZZ_CPU" ] || [ "$rc" -ne 72 ] || rc=0
echo "[fuzz] $target: ${cpu}s CPU in $(( $(date +%s) - start ))s wall"
# The last status line and the final stats: executions, coverage (edges), features, corpus.
grep -E '^#[0-9]+' "$log" | tail -1 || true
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
findings=$(find "$work/findings/$target" -type f | wc -l)
echo "[fuzz] $target: exit $rc, $findings finding(s) in $work/findings/$target"
[ "$rc" -eq 0 ] && [ "$findings" -eq 0 ]
