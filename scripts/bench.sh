#!/usr/bin/env bash
# npm run bench: the JS benchmark (bench/js/run.mjs). Installs what is missing, brings dist/ up to date with
# the sources (incremental: nothing is rebuilt when nothing changed), then races xattn's SIMD, relaxed-SIMD and
# scalar wasm builds against onnxruntime-web, tfjs-backend-wasm, plain JS and onnxruntime-node, prints the table and
# writes bench/results.json. Takes about eight minutes on a 2-core machine, the decoding and threads sections most
# of it.
# Arguments go to run.mjs, e.g. `npm run bench -- --shapes 8x1024x64 --no-streaming`.
# XATTN_BENCH_SKIP_BUILD=1 measures dist/ as it is (e.g. while another process is editing the sources).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh wasm node
if [ "${XATTN_BENCH_SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/build-wasm.sh
fi
# Node 20 runs the relaxed-SIMD build only with this flag (Chromium runs it unflagged).
exec node --experimental-wasm-relaxed-simd bench/js/run.mjs "$@"
