#!/usr/bin/env bash
# Builds the WebAssembly flavours of xattn with Emscripten + Embind:
#   dist/xattn-simd.{mjs,wasm}    wasm SIMD128 (xsimd's sse4_1 arch, lowered by emcc)
#   dist/xattn-scalar.{mjs,wasm}  no SIMD, for engines without it
#   dist/xattn-simd-threads.*     SIMD128 + threads (Emscripten pthreads over shared memory): one .wasm, and two
#                                 glues with their pthread worker scripts: .mjs + -worker-source.mjs (the worker
#                                 script as a module's text) for browsers, Workers and bundlers; -node.cjs +
#                                 -node.worker.cjs for Node's worker_threads (CommonJS, because 3.1.6's ES module
#                                 glue calls require() under Node). The pool holds Module.xattnPoolSize workers:
#                                 the instance's thread count minus the caller, set by js/instantiate.js.
#   dist/xattn-relaxed-simd.*, dist/xattn-relaxed-simd-threads.*
#                                 the SIMD and threaded SIMD builds with relaxed SIMD: every a·b + c in the
#                                 kernels one f32x4.relaxed_madd. The kernel file is compiled by clang 16 (3.1.6's
#                                 clang 14 writes pre-standard relaxed opcodes, which engines refuse); the other
#                                 objects are the plain build's. Linked at -O1 (3.1.6 runs binaryen 108 at -O2
#                                 and above, which cannot read relaxed ops), then optimised by the npm package
#                                 binaryen's wasm-opt -O3 (node_modules: npm ci first).
# Objects are kept in build/wasm/<flavour>/ and rebuilt only when a source or header changed.
#   scripts/build-wasm.sh [FLAVOUR…]   only those flavours (see the end of this file); all by default
set -euo pipefail
cd "$(dirname "$0")/.."
only=("$@")

source scripts/wasm-toolchain.sh
inc=build/wasm/include
wasm_toolchain_env "$inc"
mkdir -p dist

# The JavaScript side of the boundary's schema, from the C++ lists (a no-op when they did not change).
node scripts/gen-boundary.mjs

# The library's sources, from the list CMakeLists.txt reads too, and the bindings.
mapfile -t sources < <(grep -v '^#' src/sources.txt | grep .)
sources+=(src/bindings/embind.cpp)
version=$(node -p "require('./package.json').version")

# A changed header or source list rebuilds every object; package.json (the version) rebuilds version.cpp.
newest_header=$(find src \( -name '*.hpp' -o -name 'sources.txt' \) -printf '%T@\n' | sort -n | tail -1)
common=(-std=c++17 -O3 -DNDEBUG -I"$inc" -Isrc -Wall "-DXATTN_VERSION=\"$version\"")
# (one_caller_inline: scripts/wasm-toolchain.sh says why.)
link=(--bind -O3 -sMODULARIZE=1 -sEXPORT_ES6=1 -sENVIRONMENT=web,worker -sALLOW_MEMORY_GROWTH=1
      -sMAXIMUM_MEMORY=2147483648 -sEXPORTED_FUNCTIONS=_malloc,_free -sEXPORTED_RUNTIME_METHODS=HEAPU8,HEAPF32
      -sDYNAMIC_EXECUTION=0 -sFILESYSTEM=0 -sTEXTDECODER=1 "-sBINARYEN_EXTRA_PASSES=$one_caller_inline")

# The kernel file of the relaxed builds, compiled by clang 16 (compile_relaxed).
relaxed_sources=(src/kernels/arch_sse41.cpp)
# compile [relaxed] FLAGS… -- MORE…: em++ FLAGS… MORE…, or compile_relaxed FLAGS… -- MORE….
compile() {
  if [ "$1" = relaxed ]; then
    shift
    compile_relaxed "$@"
  else
    local flags=()
    while [ "$1" != -- ]; do flags+=("$1"); shift; done
    shift
    em++ "${flags[@]}" "$@"
  fi
}
export -f compile compile_relaxed

# is_stale SRC OBJ: the object is missing or older than its source, a header or (version.cpp) package.json.
is_stale() {
  [ ! -f "$2" ] || [ "$1" -nt "$2" ] || { [ "$1" = src/version.cpp ] && [ package.json -nt "$2" ]; } || \
    awk -v a="$newest_header" -v b="$(stat -c %Y "$2")" 'BEGIN { exit !(a > b) }'
}

# build_flavour NAME [--relaxed BASE] [compile flags…] [-- extra link flags…]
# With --relaxed, only relaxed_sources are compiled (by clang 16: `compile relaxed`); the other objects are
# BASE's, built with the same flags, and a newer one of them relinks the flavour.
build_flavour() {
  local flavour=$1; shift
  local base="" flags=() extra=() objs=() stale=()
  [ "${1-}" = --relaxed ] && { base=$2; shift 2; }
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; extra=("$@"); }
  local dir=build/wasm/$flavour
  mkdir -p "$dir"
  for src in "${sources[@]}"; do
    local name
    name=$(echo "${src#src/}" | tr / _).o
    if [ -n "$base" ] && [[ ! " ${relaxed_sources[*]} " =~ " $src " ]]; then
      objs+=("build/wasm/$base/$name")
      [ "build/wasm/$base/$name" -nt "dist/xattn-$flavour.wasm" ] && stale+=("")  # relink only
      continue
    fi
    objs+=("$dir/$name")
    is_stale "$src" "$dir/$name" && stale+=("$src:$dir/$name")
  done
  local compile=("${flags[@]}" -- "${common[@]}")
  [ -n "$base" ] && compile=(relaxed "${compile[@]}")
  local todo=()
  for s in "${stale[@]}"; do [ -n "$s" ] && todo+=("$s"); done
  if [ ${#todo[@]} -gt 0 ]; then
    echo "xattn: compiling ${#todo[@]} file(s) for the $flavour wasm build"
    printf '%s\n' "${todo[@]}" | xargs -P "$(nproc)" -I{} bash -c 'src=${1%%:*}; obj=${1#*:}; shift; compile "$@" -c "$src" -o "$obj"' \
      _ {} "${compile[@]}"
  fi
  local out=dist/xattn-$flavour.mjs
  if [ ${#stale[@]} -gt 0 ] || [ ! -f "$out" ] || [ ! -f "dist/xattn-$flavour.wasm" ]; then
    echo "xattn: linking $out"
    if [ -n "$base" ]; then
      link_relaxed "$dir/link" "$flavour" "${objs[@]}" "${flags[@]}" "${link[@]}" "${extra[@]}"
    else
      em++ "${objs[@]}" "${flags[@]}" "${link[@]}" "${extra[@]}" -o "$out"
    fi
    if [ ${#extra[@]} -gt 0 ]; then
      # The glue would start its pthread workers from new URL('….worker.js', import.meta.url) when not given
      # locateFile; js/browser.js always gives it, and bundlers would otherwise try to bundle that script.
      # (An -O1 glue, the relaxed builds', is not minified: a space may follow the comma.)
      local pattern="new Worker(new URL(\"xattn-$flavour.worker.js\", \?import.meta.url))"
      grep -q "$pattern" "$out" || { echo "xattn: the $flavour glue changed: no $pattern" >&2; exit 1; }
      sed -i "s|$pattern|new Worker(locateFile(\"xattn-$flavour.worker.js\"))|" "$out"
      link_node_glue "$flavour" "$base" "${objs[@]}" "${flags[@]}" "${link[@]}" "${extra[@]}"
      # The pthread worker script as the text of an ES module: js/browser.js starts it from a blob: URL, so no
      # server or bundler ever serves (or transforms, or inlines as a data: URL) a script of its own.
      node -e 'const fs = require("fs"); const [src, dst] = process.argv.slice(1);
        fs.writeFileSync(dst, "// Generated by scripts/build-wasm.sh from Emscripten'"'"'s pthread worker script: do not edit.\nexport default " +
          JSON.stringify(fs.readFileSync(src, "utf8")) + ";\n");' "dist/xattn-$flavour.worker.js" "dist/xattn-$flavour-worker-source.mjs"
    fi
  fi
}

# link_relaxed DIR NAME OBJS… FLAGS…: links into DIR with relaxed_link_flags, then optimises the .wasm into dist/
# (optimise_relaxed) and copies the glue beside it.
link_relaxed() {
  local dir=$1 flavour=$2; shift 2
  mkdir -p "$dir"
  local args
  mapfile -t args < <(relaxed_link_flags "$@")
  em++ "${args[@]}" -o "$dir/xattn-$flavour.mjs"
  optimise_relaxed "$dir/xattn-$flavour.wasm" "dist/xattn-$flavour.wasm"
  cp "$dir/xattn-$flavour.mjs" "dist/xattn-$flavour.mjs"
  [ ! -f "$dir/xattn-$flavour.worker.js" ] || cp "$dir/xattn-$flavour.worker.js" "dist/xattn-$flavour.worker.js"
}
# A threaded flavour's Node glue: the same objects linked for ENVIRONMENT=node as CommonJS. Its .wasm must be
# byte for byte the browser one, which is the only one shipped. BASE is set for a relaxed flavour.
link_node_glue() {
  local flavour=$1 base=$2; shift 2
  local dir=build/wasm/$flavour-node args=()
  for a in "$@"; do
    case $a in -sEXPORT_ES6=1) ;; -sENVIRONMENT=*) args+=(-sENVIRONMENT=node) ;; *) args+=("$a") ;; esac
  done
  mkdir -p "$dir"
  if [ -n "$base" ]; then
    mapfile -t args < <(relaxed_link_flags "${args[@]}")
    em++ "${args[@]}" -sEXPORT_NAME=createXattnModule -o "$dir/xattn-$flavour.js"
    optimise_relaxed "$dir/xattn-$flavour.wasm" "$dir/xattn-$flavour.opt.wasm"
    mv "$dir/xattn-$flavour.opt.wasm" "$dir/xattn-$flavour.wasm"
  else
    em++ "${args[@]}" -sEXPORT_NAME=createXattnModule -o "$dir/xattn-$flavour.js"
  fi
  cmp -s "$dir/xattn-$flavour.wasm" "dist/xattn-$flavour.wasm" || { echo "xattn: the Node link of $flavour gave another .wasm" >&2; exit 1; }
  # The glue sets global.Worker for its own use; keep that name inside the module instead of on the user's global.
  local pattern='global.Worker *= *nodeWorkerThreads.Worker'
  grep -q "$pattern" "$dir/xattn-$flavour.js" || { echo "xattn: the Node glue changed: no global.Worker" >&2; exit 1; }
  { echo 'var Worker;'; sed "s/$pattern/Worker=nodeWorkerThreads.Worker/" "$dir/xattn-$flavour.js"; } \
    > "dist/xattn-$flavour-node.cjs"
  cp "$dir/xattn-$flavour.worker.js" "dist/xattn-$flavour-node.worker.cjs"
}

# link_testing NAME BASES FLAGS… -- LINK…: a testing build for the JS suite (tests/js/testing-build.mjs): the
# objects of BASES (a colon-separated list of flavours, searched in order), but the sources with test settings
# and counters (testing_sources) compiled with XATTN_TESTING, linked for Node only into build/wasm/NAME/ (a relaxed
# one, NAME relaxed-…, as the relaxed builds are linked). Never shipped.
testing_sources=(src/parallel.cpp src/bindings/embind.cpp)
link_testing() {
  local flavour=$1 bases=$2; shift 2
  local flags=() extra=() objs=() relink=0
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  extra=("$@")
  local dir=build/wasm/$flavour out=build/wasm/$flavour/xattn-$flavour
  # The testing sources are never relaxed sources: a relaxed testing build links its plain twin's objects of them
  # (the same flags), built first in the same chain.
  local testing_dir=build/wasm/${flavour#relaxed-}
  mkdir -p "$dir" "$testing_dir"
  for src in "${sources[@]}"; do
    local name obj=""
    name=$(echo "${src#src/}" | tr / _).o
    if [[ " ${testing_sources[*]} " =~ " $src " ]]; then
      obj=$testing_dir/$name
      [ "$obj" -nt "$out.cjs" ] && relink=1
      if is_stale "$src" "$obj"; then
        em++ "${flags[@]}" "${common[@]}" -DXATTN_TESTING -c "$src" -o "$obj"
        relink=1
      fi
    else
      local base
      for base in ${bases//:/ }; do [ -f "build/wasm/$base/$name" ] && { obj=build/wasm/$base/$name; break; }; done
      [ "$obj" -nt "$out.cjs" ] && relink=1
    fi
    objs+=("$obj")
  done
  [ -f "$out.cjs" ] || relink=1
  [ $relink = 1 ] || return 0
  echo "xattn: linking the $flavour build (tests only)"
  local args=()
  for a in "${flags[@]}" "${link[@]}" "${extra[@]}"; do
    case $a in -sEXPORT_ES6=1) ;; -sENVIRONMENT=*) args+=(-sENVIRONMENT=node) ;; *) args+=("$a") ;; esac
  done
  if [[ $flavour == relaxed-* ]]; then
    mapfile -t args < <(relaxed_link_flags "${args[@]}")
    em++ "${objs[@]}" "${args[@]}" -sEXPORT_NAME=createXattnModule -o "$out.js"
    optimise_relaxed "$out.wasm" "$out.opt.wasm"
    mv "$out.opt.wasm" "$out.wasm"
  else
    em++ "${objs[@]}" "${args[@]}" -sEXPORT_NAME=createXattnModule -o "$out.js"
  fi
  local pattern='global.Worker *= *nodeWorkerThreads.Worker'
  { echo 'var Worker;'; sed "s/$pattern/Worker=nodeWorkerThreads.Worker/" "$out.js"; } > "$out.cjs"
  cp "$out.worker.js" "$out.worker.cjs"
}

simd=(-msimd128 -msse4.1)
# Threads: at most 4 (the calling thread and a pool of up to 3 workers, one per thread beside the caller, started
# while the module loads, since a browser's main thread cannot wait for a worker to start). Each thread's stack is
# 1 MiB; the kernels use little.
threads=(-pthread -DXATTN_MAX_THREADS=4)
threads_link=(-sPTHREAD_POOL_SIZE=Module.xattnPoolSize -sDEFAULT_PTHREAD_STACK_SIZE=1048576 -sINITIAL_MEMORY=33554432
              -Wno-pthreads-mem-growth -sNODEJS_CATCH_EXIT=0 -sNODEJS_CATCH_REJECTION=0)
# Arguments name the flavours to build (a relaxed one brings its plain one, whose objects it links): npm start
# builds the one the lab opens with first. None: every flavour, the testing builds and the CommonJS declarations.
wanted() {
  [ ${#only[@]} -eq 0 ] && return 0
  local f
  for f in "${only[@]}"; do [ "$f" = "$1" ] || [ "$f" = "relaxed-$1" ] && return 0; done
  return 1
}
# Two chains of builds that share no objects, run side by side: each flavour's build has stretches on one core
# (a link, binaryen's optimiser, clang 16 on the relaxed kernel file) that the other chain fills. The two take
# about the same time; together they took about three quarters of the time of the five builds one after another.
plain_chain() {
  ! wanted simd || build_flavour simd "${simd[@]}"
  ! wanted relaxed-simd || build_flavour relaxed-simd --relaxed simd "${simd[@]}"
  ! wanted scalar || build_flavour scalar
}
threads_chain() {
  ! wanted simd-threads || build_flavour simd-threads "${simd[@]}" "${threads[@]}" -- "${threads_link[@]}"
  ! wanted relaxed-simd-threads || \
    build_flavour relaxed-simd-threads --relaxed simd-threads "${simd[@]}" "${threads[@]}" -- "${threads_link[@]}"
  [ ${#only[@]} -eq 0 ] || return 0
  link_testing simd-threads-testing simd-threads "${simd[@]}" "${threads[@]}" -- "${threads_link[@]}"
  link_testing relaxed-simd-threads-testing relaxed-simd-threads:simd-threads "${simd[@]}" "${threads[@]}" -- "${threads_link[@]}"
}
plain_chain & plain=$!
threads_chain & threaded=$!
status=0
wait "$plain" || status=$?
wait "$threaded" || status=$?
[ "$status" -eq 0 ] || { echo "xattn: a WebAssembly build failed (above)" >&2; exit "$status"; }
[ ${#only[@]} -eq 0 ] || exit 0
# The declarations for require('xattn'), generated from js/index.d.ts.
node scripts/build-types.mjs
