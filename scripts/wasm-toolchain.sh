# The Emscripten toolchain as every wasm build here uses it, sourced by scripts/build-wasm.sh, bench/wasm-bench.sh
# and bench/blocking/blocking-probe.sh (run from the repository's root).

# wasm_toolchain_env INC: the environment emcc needs, and INC holding the only header trees it may see.
wasm_toolchain_env() {
  # emcc's JS optimizer needs acorn from Debian's node modules; the Node on PATH is not Debian's.
  export NODE_PATH=/usr/share/nodejs
  # Debian's emcc runs the binaryen tools it finds on PATH, and npm scripts (npm run build:wasm, npm pack's
  # prepack) put node_modules/.bin first, where npm binaryen 132's wasm-opt and wasm-metadce would answer: their
  # minify map is not the format emcc 3.1.6 reads, and the -O3 glue then names imports the .wasm does not have.
  # emcc gets Debian's binaryen 108; only optimise_relaxed runs npm's, by path.
  PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/node_modules/\.bin$' | paste -sd: -)
  export PATH
  # emcc has its own sysroot: give it only the three header trees it needs, never /usr/include.
  mkdir -p "$1"
  for lib in xtensor xsimd xtl; do ln -sfn "/usr/include/$lib" "$1/$lib"; done
}

# Binaryen's -O3 inlines every function that has one caller, however large. V8 allocates registers one function
# at a time, and a function of many loops gets worse registers in each: the decoding kernel, inlined whole, spilled
# vectors to the stack in every hot loop (V8's code for it, read off, had dozens of times the stack accesses it
# has with its blocks kept apart, and slower steps). The kernels mark the functions that hold a hot loop
# XATTN_NOINLINE (kernels/micro.hpp); this keeps binaryen from inlining them again for having one caller (smaller
# functions still are).
one_caller_inline=--one-caller-inline-max-function-size=100

# compile_relaxed FLAGS… -- MORE…: a file of a relaxed-SIMD build, compiled by clang 16 (Emscripten 3.1.6's clang 14
# writes pre-standard relaxed opcodes, which engines refuse) with em++'s own target, sysroot, defines and the
# flavour's FLAGS (`em++ FLAGS… --cflags`: -D_LIBCPP_ABI_VERSION=2 and the rest must match the other objects; it
# turns -msse4.1 into the defines Emscripten's SSE headers want), then MORE….
compile_relaxed() {
  local flags=() em
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  read -r -a em <<< "$(em++ "${flags[@]}" --cflags)"
  clang++-16 "${em[@]}" -mrelaxed-simd "$@"
}

# relaxed_link_flags FLAGS…: link flags for objects holding relaxed ops: -O3 becomes -O1 (3.1.6 runs binaryen 108
# at -O2 and above, which cannot read relaxed ops), 3.1.6's own binaryen passes go (optimise_relaxed runs them),
# and WASM_BIGINT is added (without it wasm-emscripten-finalize reads every function body).
relaxed_link_flags() {
  for a in "$@"; do
    case $a in -O3) echo -O1 ;; -sBINARYEN_EXTRA_PASSES=*) ;; *) printf '%s\n' "$a" ;; esac
  done
  echo -sWASM_BIGINT
}

# optimise_relaxed IN OUT: npm binaryen's wasm-opt -O3 over a module linked with relaxed_link_flags. It reads the
# features from the module's target_features section (-O1 keeps it) and drops it after.
optimise_relaxed() {
  local wasm_opt=node_modules/binaryen/bin/wasm-opt
  [ -x "$wasm_opt" ] || { echo "xattn: relaxed-SIMD modules need npm's binaryen (npm ci): no $wasm_opt" >&2; exit 1; }
  node "$wasm_opt" "$1" -O3 "$one_caller_inline" --strip-target-features -o "$2"
}
