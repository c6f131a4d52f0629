#!/usr/bin/env bash
# Times the shipped score micro-kernel at several register blockings, in the plain SIMD128 build and the relaxed
# one, beside both peaks, in one Node process (blocks.cpp, probe.mjs). What it answers: how far each blocking's
# products reach toward the peak of its build on this CPU, with nothing else in the loop. Installs what is missing
# first (the wasm toolchain, clang 16, npm's binaryen). `blocking-probe.sh build` builds without running.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/ensure-deps.sh wasm node
source scripts/wasm-toolchain.sh
out=build/blocking-probe
inc=$out/include
wasm_toolchain_env "$inc"
flags=(-std=c++17 -O3 -DNDEBUG -msimd128 -msse4.1 -I"$inc" -Isrc)
em++ "${flags[@]}" -DBLOCKS_FLAVOUR=plain -c bench/blocking/blocks.cpp -o "$out/plain.o"
compile_relaxed "${flags[@]}" -- -DBLOCKS_FLAVOUR=relaxed -c bench/blocking/blocks.cpp -o "$out/relaxed.o"
# Linked as scripts/build-wasm.sh links its relaxed builds.
mapfile -t link < <(relaxed_link_flags -O3 -sENVIRONMENT=node -sMODULARIZE \
  -sEXPORTED_FUNCTIONS=_blocks_run_plain,_blocks_run_relaxed)
em++ "$out"/{plain,relaxed}.o "${link[@]}" -o "$out/probe.cjs"
optimise_relaxed "$out/probe.wasm" "$out/probe.wasm"
# --no-liftoff: every variant in V8's optimised code, as the kernels run after their first calls (some variants
# stayed in the baseline tier through the whole run otherwise, at a fraction of their speed).
[ "${1-}" = build ] || node --experimental-wasm-relaxed-simd --no-liftoff --no-experimental-fetch bench/blocking/probe.mjs \
  "$PWD/$out/probe.cjs"
