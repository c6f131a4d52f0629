#!/usr/bin/env bash
# npm test: what a newcomer needs to know the project works. Installs what is missing (Debian packages, with
# apt-get update first; the npm devDependencies), builds, and runs the native doctest suite (and the C++
# consumer), the JS suite on every build, the package test and the web demo's core tests; fails when any fails.
# The long suites (sanitizers, ThreadSanitizer, fuzzing, soak, the learner's walks through the lab in Chromium,
# the API reference) are npm run test:long, and npm run test:all runs both. Builds are reused between runs (build/, dist/).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's header says when it started, so a run's log shows where its time goes.
phase() { echo "== $1 ($((SECONDS / 60))m$((SECONDS % 60))s in)"; }
bash scripts/ensure-deps.sh native wasm browser node
# The WebAssembly builds run beside the native suite, in a process group of their own (stopped if the suite
# fails): each has stretches on one core (links, CMake's configure, the consumer project) that the other fills.
mkdir -p build/artifacts
wasm_log=build/artifacts/build-wasm.log
setsid bash scripts/build-wasm.sh >"$wasm_log" 2>&1 &
wasm=$!
trap 'kill -- -"$wasm" 2>/dev/null || true' EXIT
phase "native doctest suite (the WebAssembly builds run beside it)"
bash scripts/test-native.sh
phase "WebAssembly builds (their log: $wasm_log)"
wasm_status=0
wait "$wasm" || wasm_status=$?
trap - EXIT
cat "$wasm_log"
[ "$wasm_status" -eq 0 ] || { echo "npm test: the WebAssembly builds failed (above)" >&2; exit "$wasm_status"; }
phase "JS suite (every build: SIMD, threaded SIMD, their relaxed-SIMD variants, scalar)"
bash scripts/test-js.sh tests/js/
phase "packaging"
bash scripts/test-package.sh
phase "web demo (its core checks; the learner's walks are in npm run test:long)"
bash scripts/test-web.sh quick
echo "== npm test passed ($((SECONDS / 60))m$((SECONDS % 60))s)"
