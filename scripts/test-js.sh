#!/usr/bin/env bash
# Runs JS test files or folders (default tests/js/) under node:test with the flags the suites need:
#   --experimental-wasm-relaxed-simd  Node 20 validates relaxed SIMD only with it (Chromium runs it unflagged); the
#                                     suites run the relaxed builds only where it validates (tests/js/golden.mjs)
#   --no-liftoff                      Node 20 could deadlock at exit, after every test passed, waiting for V8's
#                                     tier-up tasks; compiling every wasm function with the optimising tier at
#                                     instantiation leaves none behind (it changes when code is compiled, not what
#                                     it computes)
#   --expose-gc                       for the tests of what garbage collection releases
#   --test-concurrency=N              files run N at a time (XATTN_JS_CONCURRENCY, default the core count); the
#                                     soak suite runs one at a time (npm run test:long): its lifetime tests read
#                                     this process's OS threads and resident memory after dropping 50 threaded
#                                     instances, and with other files' worker threads beside them the release was
#                                     not done within their wait on 2 cores
set -euo pipefail
cd "$(dirname "$0")/.."
# Bounded (XATTN_JS_TIMEOUT seconds, default 1800): a hang fails the run rather than stalling it.
exec timeout "${XATTN_JS_TIMEOUT:-1800}" node --no-liftoff --experimental-wasm-relaxed-simd --expose-gc --test --test-concurrency="${XATTN_JS_CONCURRENCY:-$(nproc)}" --test-reporter=spec --test-timeout=600000 "${@:-tests/js/}"
