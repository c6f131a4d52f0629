#!/usr/bin/env bash
# Configures build/fuzz: clang 14 with AddressSanitizer + UndefinedBehaviorSanitizer (and libFuzzer's coverage
# instrumentation, CMake's XATTN_FUZZ). One configuration for both of its users, so neither rebuilds the other's
# objects: scripts/fuzz.sh (the fuzz targets) and scripts/test-sanitizers.sh (the doctest suite).
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang-14 CXX=clang++-14 cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXATTN_FUZZ=ON -DXATTN_BUILD_TESTS=ON >/dev/null
