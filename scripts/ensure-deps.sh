#!/usr/bin/env bash
# Installs the Debian packages a part of xattn needs, only when one is missing.
#   scripts/ensure-deps.sh native    g++, CMake, xtensor, xsimd, xtl, doctest
#   scripts/ensure-deps.sh wasm      + Emscripten and binaryen, and clang 16 for the relaxed-SIMD kernels
#                                    (Emscripten 3.1.6's clang 14 writes pre-standard relaxed opcodes)
#   scripts/ensure-deps.sh browser   + Chromium (browser tests) and NumPy (the web suite loads the page's .npy files with it)
#   scripts/ensure-deps.sh fuzz      + clang 14 and its runtimes (libFuzzer, sanitizers)
#   scripts/ensure-deps.sh node      + the npm devDependencies (npm ci when node_modules is missing or stale)
set -euo pipefail
cd "$(dirname "$0")/.."

need_npm=0

packages=(g++ cmake libxtensor-dev libxsimd-dev xtl-dev doctest-dev)
for group in "$@"; do
  case "$group" in
    native) ;;
    wasm) packages+=(emscripten binaryen clang-16) ;;
    browser) packages+=(chromium python3-numpy) ;;
    fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    node) need_npm=1 ;;
    *) echo "ensure-deps: unknown group '$group' (native, wasm, browser, fuzz, node)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "xattn: installing missing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

# npm ci when node_modules is missing or older than the lock file. onnxruntime-node's install
# script would download a GPU add-on, which is neither needed nor reachable: skip it.
if [ "$need_npm" = 1 ] && { [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  # On stderr: npm pack --json runs this through prepack (build:wasm), and its stdout must stay the JSON.
  echo "xattn: installing npm devDependencies" >&2
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >&2
fi
