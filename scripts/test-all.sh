#!/usr/bin/env bash
# npm test: installs what is missing, builds, and runs every suite; fails when any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh native wasm browser fuzz node
echo "== native doctest suite"
bash scripts/test-native.sh
echo "== native suite under AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/test-sanitizers.sh
echo "== fuzzing (bounded)"
bash scripts/fuzz.sh "${XATTN_FUZZ_SECONDS:-30}"
echo "== WebAssembly builds"
bash scripts/build-wasm.sh
echo "== JS suite (both builds)"
# --no-liftoff (here and for tests/web): Node 20 can deadlock at exit, after every test has passed, waiting in
# its platform's DrainTasks for V8 background tasks; test files that instantiate the wasm builds hung in 2 to 7
# runs of 10 that way. Compiling every wasm function with the optimising tier at instantiation leaves no
# tier-up tasks behind, and 35 runs of 35 exited. The flag changes when code is compiled, not what it computes.
node --no-liftoff --expose-gc --test --test-reporter=spec tests/js/
echo "== packaging"
bash scripts/test-package.sh
echo "== web demo"
bash scripts/test-web.sh
