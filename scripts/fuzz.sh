#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a bounded time.
#   scripts/fuzz.sh            CI: 45 s per target (npm test passes 30), from the committed seed corpus
#   scripts/fuzz.sh 3600       a longer run: seconds per target
# New inputs the fuzzer finds are kept in build/fuzz/corpus-<target> (not committed); a crash writes
# build/fuzz/crash-* and fails the run. Every crash becomes a regression test in tests/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-45}
bash scripts/configure-fuzz.sh
targets="fuzz_plan fuzz_kernels fuzz_kv_cache fuzz_backward fuzz_mha fuzz_rotary"
cmake --build build/fuzz -j"$(nproc)" --target $targets
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for target in $targets; do
  work=build/fuzz/corpus-$target
  log=build/fuzz/$target.log
  mkdir -p "$work"
  echo "xattn: fuzzing $target for ${seconds}s"
  status=0
  ./build/fuzz/$target -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/crash-$target-" "$work" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  grep -E "DONE|stat::number_of_executed_units|ERROR|SUMMARY|invariant failed" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "xattn: $target failed (exit $status); the input is in build/fuzz/crash-$target-*"
    exit 1
  fi
done
