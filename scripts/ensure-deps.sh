#!/usr/bin/env bash
# Installs the Debian packages a part of xattn needs, only when one is missing.
#   scripts/ensure-deps.sh native    g++, CMake, xtensor, xsimd, xtl, doctest
#   scripts/ensure-deps.sh wasm      + Emscripten and binaryen
#   scripts/ensure-deps.sh browser   + Chromium (browser tests)
set -euo pipefail

packages=(g++ cmake libxtensor-dev libxsimd-dev xtl-dev doctest-dev)
for group in "$@"; do
  case "$group" in
    native) ;;
    wasm) packages+=(emscripten binaryen) ;;
    browser) packages+=(chromium) ;;
    *) echo "ensure-deps: unknown group '$group' (native, wasm, browser)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "xattn: installing missing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
