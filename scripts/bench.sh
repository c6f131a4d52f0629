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
# Fresh results and the C library's heap: with glibc's defaults a freed heap top goes back to the system past a
# threshold that moves as the process runs, and some processes then take a page fault for every 4 KiB of each
# fresh multi-MiB result while others never do (the same two-thread call at 32x512x64 ran 0.69-0.76x as fast with
# fresh arrays as with options.out in 8 processes of 12; 0.94-0.99x in every process with this setting, see
# bench/RESULTS.md). Every implementation hands back fresh arrays, so for all of them alike, in every process the
# bench starts, freed memory stays in the heap. Both thresholds are set: setting one stops glibc moving the other.
# (Ignored outside glibc; run.mjs prints the setting.)
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
# Node 20 runs the relaxed-SIMD build only with this flag (Chromium runs it unflagged).
exec node --experimental-wasm-relaxed-simd bench/js/run.mjs "$@"
