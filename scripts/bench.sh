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
# Fresh results and the C library's heap: with glibc's defaults some processes hand freed results back to the
# system and then fault in every page of each fresh multi-MiB result, others never, which made two-thread figures
# differ from one process to the next (bench/README.md, "Running"). Every implementation hands back fresh arrays, so for all of them alike, every process the bench starts keeps freed
# memory in its heap. Both thresholds are set: setting one stops glibc moving the other. (Ignored outside glibc;
# run.mjs prints the setting.)
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
# Node 20 runs the relaxed-SIMD build only with this flag (Chromium runs it unflagged).
exec node --experimental-wasm-relaxed-simd bench/js/run.mjs "$@"
