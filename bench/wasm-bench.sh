#!/usr/bin/env bash
# Builds bench/wasm_kernel_bench.cpp with Emscripten and runs it in Node.
#   bash bench/wasm-bench.sh          SIMD128 build (xsimd sse4_1 lowered to f32x4), then the scalar one
#   bash bench/wasm-bench.sh simd     only one flavour (also: scalar)
#   bash bench/wasm-bench.sh simd big only the L = S = 16384 streaming run and its memory; quick: no such run;
#                                     layer: only the TransformerEncoderLayer's products, forward and backward
# Prints the count of f32x4 ops in the SIMD binary as a check that the hot loops are vectorised.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wasm-toolchain.sh
out=build/wasm-bench
inc=$out/include
wasm_toolchain_env "$inc"
# The library's sources from the one list (src/sources.txt), and the benchmark.
mapfile -t sources < <(grep -v '^#' src/sources.txt | grep .)
sources+=(bench/wasm_kernel_bench.cpp)
version=$(node -p "require('./package.json').version")
for flavour in ${1:-simd scalar}; do
  flags=()
  [ "$flavour" = simd ] && flags=(-msimd128 -msse4.1)
  em++ -std=c++17 -O3 -DNDEBUG "-DXATTN_VERSION=\"$version\"" "${flags[@]}" -I"$inc" -Isrc "${sources[@]}" \
       -sALLOW_MEMORY_GROWTH -sENVIRONMENT=node "-sBINARYEN_EXTRA_PASSES=$one_caller_inline" \
       -o "$out/bench-$flavour.cjs"  # inlining as scripts/build-wasm.sh limits it
  [ "$flavour" = simd ] && echo "f32x4 ops in the SIMD build: $(wasm-dis "$out/bench-simd.wasm" | grep -c f32x4)"
  # .cjs: the package is "type": "module". Node 20's global fetch cannot load the .wasm from a file path (see shared notes); use fs instead.
  node --no-experimental-fetch "$out/bench-$flavour.cjs" "${@:2}"
done
