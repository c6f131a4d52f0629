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
node --expose-gc --test --test-reporter=spec tests/js/
echo "== packaging"
bash scripts/test-package.sh
echo "== web demo"
bash scripts/test-web.sh
