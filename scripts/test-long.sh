#!/usr/bin/env bash
# npm run test:long: the suites that take long, which CI runs after npm test: the C++ consumers npm test leaves
# (xtensor's 0.26+ layout, the README's C++ example), the native suite under
# AddressSanitizer + UndefinedBehaviorSanitizer and the threaded tests under ThreadSanitizer, bounded fuzzing of
# every libFuzzer target, the soak tests (tests/soak: 100,000 calls, running out of memory, 1.5 GiB calls, instances' lifetimes), the
# learner's walks through the lab in Chromium (scripts/test-web.sh long), and the API reference, which must build
# without a warning.
set -euo pipefail
cd "$(dirname "$0")/.."
phase() { echo "== $1 ($((SECONDS / 60))m$((SECONDS % 60))s in)"; }
bash scripts/ensure-deps.sh native wasm fuzz browser node
phase "C++ consumers: xtensor's 0.26+ layout in C++20, the README's C++ example"
bash scripts/test-consumer.sh long
phase "native suite under AddressSanitizer + UndefinedBehaviorSanitizer, then ThreadSanitizer"
bash scripts/test-sanitizers.sh
phase "fuzzing (bounded)"
bash scripts/fuzz.sh "${XATTN_FUZZ_SECONDS:-30}"
phase "soak (tests/soak)"
bash scripts/build-wasm.sh
XATTN_JS_TIMEOUT=2700 XATTN_JS_CONCURRENCY=1 bash scripts/test-js.sh tests/soak/
phase "web demo: the learner's walks through every panel, the production build's Workers and isolation"
bash scripts/test-web.sh long
phase "API reference (npm run docs)"
bash scripts/docs.sh
echo "== npm run test:long passed ($((SECONDS / 60))m$((SECONDS % 60))s)"
