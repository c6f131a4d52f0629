#!/usr/bin/env bash
# Builds the WebAssembly flavours of xattn with Emscripten + Embind:
#   dist/xattn-simd.{mjs,wasm}    wasm SIMD128 (xsimd's sse4_1 arch, lowered by emcc)
#   dist/xattn-scalar.{mjs,wasm}  no SIMD, for engines without it
#   dist/xattn-simd-threads.*     SIMD128 + threads (Emscripten pthreads over shared memory): one .wasm, and two
#                                 glues with their pthread worker scripts: .mjs + .worker.js for browsers,
#                                 Workers and bundlers; -node.cjs + -node.worker.cjs for Node's worker_threads
#                                 (CommonJS, because 3.1.6's ES module glue calls require() under Node).
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

# build_flavour NAME [compile flags…] [-- extra link flags…]
build_flavour() {
  local flavour=$1; shift
  local flags=() extra=() objs=() stale=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; extra=("$@"); }
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
    em++ "${objs[@]}" "${flags[@]}" "${link[@]}" "${extra[@]}" -o "$out"
    if [ ${#extra[@]} -gt 0 ]; then
      # The glue would start its pthread workers from new URL('….worker.js', import.meta.url) when not given
      # locateFile; js/browser.js always gives it, and bundlers would otherwise try to bundle that script.
      local pattern="new Worker(new URL(\"xattn-$flavour.worker.js\",import.meta.url))"
      grep -qF "$pattern" "$out" || { echo "xattn: the $flavour glue changed: no $pattern" >&2; exit 1; }
      sed -i "s|new Worker(new URL(\"xattn-$flavour.worker.js\",import.meta.url))|new Worker(locateFile(\"xattn-$flavour.worker.js\"))|" "$out"
      link_node_glue "$flavour" "${objs[@]}" "${flags[@]}" "${link[@]}" "${extra[@]}"
    fi
  fi
}

# The threaded flavour's Node glue: the same objects linked for ENVIRONMENT=node as CommonJS. Its .wasm must be
# byte for byte the browser one, which is the only one shipped.
link_node_glue() {
  local flavour=$1; shift
  local dir=build/wasm/$flavour-node args=()
  for a in "$@"; do
    case $a in -sEXPORT_ES6=1) ;; -sENVIRONMENT=*) args+=(-sENVIRONMENT=node) ;; *) args+=("$a") ;; esac
  done
  mkdir -p "$dir"
  em++ "${args[@]}" -sEXPORT_NAME=createXattnModule -o "$dir/xattn-$flavour.js"
  cmp -s "$dir/xattn-$flavour.wasm" "dist/xattn-$flavour.wasm" || { echo "xattn: the Node link of $flavour gave another .wasm" >&2; exit 1; }
  # The glue sets global.Worker for its own use; keep that name inside the module instead of on the user's global.
  grep -q 'global.Worker=nodeWorkerThreads.Worker' "$dir/xattn-$flavour.js" || { echo "xattn: the Node glue changed: no global.Worker" >&2; exit 1; }
  { echo 'var Worker;'; sed 's/global\.Worker=nodeWorkerThreads\.Worker/Worker=nodeWorkerThreads.Worker/' "$dir/xattn-$flavour.js"; } \
    > "dist/xattn-$flavour-node.cjs"
  cp "$dir/xattn-$flavour.worker.js" "dist/xattn-$flavour-node.worker.cjs"
}

build_flavour simd -msimd128 -msse4.1
build_flavour scalar
# Threads: at most 4 (the calling thread and a pool of 3 workers, started while the module loads, since a
# browser's main thread cannot wait for a worker to start). Each thread's stack is 1 MiB; the kernels use little.
build_flavour simd-threads -msimd128 -msse4.1 -pthread -DXATTN_MAX_THREADS=4 -- \
  -sPTHREAD_POOL_SIZE=3 -sDEFAULT_PTHREAD_STACK_SIZE=1048576 -sINITIAL_MEMORY=33554432 -Wno-pthreads-mem-growth \
  -sNODEJS_CATCH_EXIT=0 -sNODEJS_CATCH_REJECTION=0
# The declarations for require('xattn'), generated from js/index.d.ts.
node scripts/build-types.mjs
