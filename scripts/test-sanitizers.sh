#!/usr/bin/env bash
# The native doctest suite built with AddressSanitizer + UndefinedBehaviorSanitizer, leak detection on.
# Any report fails the run (-fno-sanitize-recover, halt_on_error). Then the thread tests (and the kernels
# they split) under ThreadSanitizer, which cannot share a build with AddressSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
# The ASan + UBSan suite is built in the fuzzing build folder (clang, scripts/fuzz.sh): the library and the
# reference, compiled once there, serve both, where a build of their own took minutes of every npm test.
bash scripts/configure-fuzz.sh
cmake --build build/fuzz -j"$(nproc)" --target xattn_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# One process for the whole suite: the sanitizers' start-up cost is paid once.
timeout 1800 ./build/fuzz/xattn_tests  # bounded: a hang fails the run

cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXATTN_TSAN=ON -DXATTN_BUILD_TESTS=ON >/dev/null
cmake --build build/tsan -j"$(nproc)" --target xattn_tsan_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 timeout 1800 ./build/tsan/xattn_tsan_tests -tc="threads*,kv cache*,*backward*"
