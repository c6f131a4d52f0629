#!/usr/bin/env bash
# Times the shipped score micro-kernel at several register blockings, in the plain SIMD128 build and the relaxed
# one, beside both peaks, in one Node process (blocks.cpp, probe.mjs). What it answers: how far each blocking's
# products reach toward the peak of its build on this CPU, with nothing else in the loop. Installs what is missing
# first (the wasm toolchain, clang 16, npm's binaryen). `blocking-probe.sh build` builds without running.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/ensure-deps.sh wasm node
export NODE_PATH=/usr/share/nodejs
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/node_modules/\.bin$' | paste -sd: -)
out=build/blocking-probe
inc=$out/include
mkdir -p "$inc"
for lib in xtensor xsimd xtl; do ln -sfn "/usr/include/$lib" "$inc/$lib"; done
flags=(-std=c++17 -O3 -DNDEBUG -msimd128 -msse4.1 -I"$inc" -Isrc)
read -r -a em <<< "$(em++ "${flags[@]}" --cflags)"
em++ "${flags[@]}" -DBLOCKS_FLAVOUR=plain -c bench/blocking/blocks.cpp -o "$out/plain.o"
clang++-16 "${em[@]}" -mrelaxed-simd -DBLOCKS_FLAVOUR=relaxed -c bench/blocking/blocks.cpp -o "$out/relaxed.o"
# As scripts/build-wasm.sh links its relaxed builds: -O1 and WASM_BIGINT (binaryen 108 cannot read relaxed ops),
# then npm binaryen's wasm-opt -O3.
em++ "$out"/{plain,relaxed}.o -O1 -sWASM_BIGINT -sENVIRONMENT=node -sMODULARIZE \
  -sEXPORTED_FUNCTIONS=_blocks_run_plain,_blocks_run_relaxed -o "$out/probe.cjs"
node node_modules/binaryen/bin/wasm-opt "$out/probe.wasm" -O3 --one-caller-inline-max-function-size=100 \
  --strip-target-features -o "$out/probe.wasm"
# --no-liftoff: every variant in V8's optimised code, as the kernels run after their first calls (some variants
# stayed in the baseline tier through the whole run otherwise, at a fraction of their speed).
[ "${1-}" = build ] || node --experimental-wasm-relaxed-simd --no-liftoff --no-experimental-fetch bench/blocking/probe.mjs \
  "$PWD/$out/probe.cjs"
