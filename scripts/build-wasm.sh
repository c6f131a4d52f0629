#!/usr/bin/env bash
# Builds the two WebAssembly flavours of xattn with Emscripten + Embind:
#   dist/xattn-simd.{mjs,wasm}    wasm SIMD128 (xsimd's sse4_1 arch, lowered by emcc)
#   dist/xattn-scalar.{mjs,wasm}  no SIMD, for engines without it
# Objects are kept in build/wasm/<flavour>/ and rebuilt only when a source or header changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# emcc's JS optimizer needs acorn from Debian's node modules; the Node on PATH is not Debian's.
export NODE_PATH=/usr/share/nodejs
# emcc has its own sysroot: give it only the three header trees it needs, never /usr/include.
inc=build/wasm/include
mkdir -p "$inc" dist
for lib in xtensor xsimd xtl; do ln -sfn "/usr/include/$lib" "$inc/$lib"; done

# The library's sources, from the list CMakeLists.txt reads too, and the bindings.
mapfile -t sources < <(grep -v '^#' src/sources.txt | grep .)
sources+=(src/bindings/embind.cpp)
version=$(node -p "require('./package.json').version")

# A changed header or source list rebuilds every object; package.json (the version) rebuilds version.cpp.
newest_header=$(find src \( -name '*.hpp' -o -name 'sources.txt' \) -printf '%T@\n' | sort -n | tail -1)
common=(-std=c++17 -O3 -DNDEBUG -I"$inc" -Isrc -Wall "-DXATTN_VERSION=\"$version\"")
link=(--bind -O3 -sMODULARIZE=1 -sEXPORT_ES6=1 -sENVIRONMENT=web,worker -sALLOW_MEMORY_GROWTH=1
      -sMAXIMUM_MEMORY=2147483648 -sEXPORTED_FUNCTIONS=_malloc,_free -sEXPORTED_RUNTIME_METHODS=HEAPU8,HEAPF32
      -sDYNAMIC_EXECUTION=0 -sFILESYSTEM=0 -sTEXTDECODER=1)

build_flavour() {
  local flavour=$1; shift
  local flags=("$@") objs=() stale=()
  local dir=build/wasm/$flavour
  mkdir -p "$dir"
  for src in "${sources[@]}"; do
    local obj=$dir/$(echo "${src#src/}" | tr / _).o
    objs+=("$obj")
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || { [ "$src" = src/version.cpp ] && [ package.json -nt "$obj" ]; } || \
       awk -v a="$newest_header" -v b="$(stat -c %Y "$obj")" 'BEGIN { exit !(a > b) }'; then
      stale+=("$src:$obj")
    fi
  done
  if [ ${#stale[@]} -gt 0 ]; then
    echo "xattn: compiling ${#stale[@]} file(s) for the $flavour wasm build"
    printf '%s\n' "${stale[@]}" | xargs -P "$(nproc)" -I{} bash -c \
      'src=${1%%:*}; obj=${1#*:}; em++ "${@:2}" -c "$src" -o "$obj"' _ {} "${common[@]}" "${flags[@]}"
  fi
  local out=dist/xattn-$flavour.mjs
  if [ ${#stale[@]} -gt 0 ] || [ ! -f "$out" ]; then
    echo "xattn: linking $out"
    em++ "${objs[@]}" "${flags[@]}" "${link[@]}" -o "$out"
  fi
}

build_flavour simd -msimd128 -msse4.1
build_flavour scalar
# The declarations for require('xattn'), generated from js/index.d.ts.
node scripts/build-types.mjs
