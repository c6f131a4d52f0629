#!/usr/bin/env bash
# Runs JS test files or folders (default tests/js/) under node:test with the flags the suites need:
#   --experimental-wasm-relaxed-simd  Node 20 validates relaxed SIMD only with it (Chromium runs it unflagged); the
#                                     suites run the relaxed builds only where it validates (tests/js/golden.mjs)
#   --no-liftoff                      Node 20 could deadlock at exit, after every test passed, waiting for V8's
#                                     tier-up tasks; compiling every wasm function with the optimising tier at
#                                     instantiation leaves none behind (it changes when code is compiled, not what
#                                     it computes)
#   --expose-gc                       for the tests of what garbage collection releases
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --no-liftoff --experimental-wasm-relaxed-simd --expose-gc --test --test-reporter=spec "${@:-tests/js/}"
