#!/usr/bin/env bash
# Installs what bench/gpt/train_torch.py needs, from Debian, only when something is missing:
#   python3-torch (1.13) and python3-numpy, and
#   libopenblas0-pthread: Debian's torch does its matrix products through libblas.so.3, an alternative that the
#   reference BLAS (libblas3, a plain triple loop) provides unless OpenBLAS is installed; OpenBLAS registers
#   itself with a higher priority, so installing it is what moves torch onto an optimised, threaded BLAS.
# Then prints which library libblas.so.3 resolves to (train_torch.py checks again, in its own process).
set -euo pipefail

packages=(python3-torch python3-numpy libopenblas0-pthread)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench/gpt: installing missing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
echo "libblas.so.3 -> $(readlink -f "/usr/lib/$arch/libblas.so.3")"
