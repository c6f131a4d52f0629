#!/usr/bin/env bash
# Builds the C++ library and its doctest suite in build/native (reused between runs), runs it with CTest,
# then builds and runs a consumer project against the installed library (scripts/test-consumer.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release -DXATTN_BUILD_TESTS=ON >/dev/null
cmake --build build/native -j"$(nproc)"
ctest --test-dir build/native --output-on-failure --timeout 600 -j"$(nproc)"
# The installed package as C++ users get it: find_package(xattn) from a separate project, and FetchContent (the
# other layout of xtensor and the README's example are in npm run test:long).
bash scripts/test-consumer.sh quick
