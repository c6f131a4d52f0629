#!/usr/bin/env bash
# npm test: installs what is missing, builds, and runs every suite; fails when any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's header says when it started, so a run's log shows where its time goes (the whole must stay well
# under CI's limit).
phase() { echo "== $1 ($((SECONDS / 60))m$((SECONDS % 60))s in)"; }
bash scripts/ensure-deps.sh native wasm browser fuzz node
phase "native doctest suite"
bash scripts/test-native.sh
phase "native suite under AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/test-sanitizers.sh
phase "fuzzing (bounded)"
bash scripts/fuzz.sh "${XATTN_FUZZ_SECONDS:-30}"
phase "WebAssembly builds"
bash scripts/build-wasm.sh
phase "JS suite (every build: SIMD, threaded SIMD, their relaxed-SIMD variants, scalar)"
# --experimental-wasm-relaxed-simd: Node 20 validates relaxed SIMD only with it (Chromium runs it unflagged), and
# the suites run the relaxed builds only where it validates (tests/js/golden.mjs BUILDS; relaxed.test.mjs checks
# the flag took effect, and that Node without it falls back to the plain SIMD build).
# --no-liftoff (here and for tests/web): Node 20 can deadlock at exit, after every test has passed, waiting in
# its platform's DrainTasks for V8 background tasks; test files that instantiate the wasm builds hung in 2 to 7
# runs of 10 that way. Compiling every wasm function with the optimising tier at instantiation leaves no
# tier-up tasks behind, and 35 runs of 35 exited. The flag changes when code is compiled, not what it computes.
node --no-liftoff --experimental-wasm-relaxed-simd --expose-gc --test --test-reporter=spec tests/js/
phase "packaging"
bash scripts/test-package.sh
phase "web demo"
bash scripts/test-web.sh
echo "== every suite passed ($((SECONDS / 60))m$((SECONDS % 60))s)"
