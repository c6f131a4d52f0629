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
phase "native doctest suite"
bash scripts/test-native.sh
phase "WebAssembly builds"
bash scripts/build-wasm.sh
phase "JS suite (every build: SIMD, threaded SIMD, their relaxed-SIMD variants, scalar)"
bash scripts/test-js.sh tests/js/
phase "packaging"
bash scripts/test-package.sh
phase "web demo (its core checks; the learner's walks are in npm run test:long)"
bash scripts/test-web.sh quick
echo "== npm test passed ($((SECONDS / 60))m$((SECONDS % 60))s)"
