#!/usr/bin/env bash
# Builds the C++ library and its doctest suite in build/native (reused between runs) and runs it with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/native -j"$(nproc)"
ctest --test-dir build/native --output-on-failure
