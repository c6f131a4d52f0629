#!/usr/bin/env bash
# C++ users' view of xattn, after scripts/test-native.sh built build/native:
#   1. cmake --install puts the library, the public headers (only those) and a package config under a prefix;
#      the library is the one built for users, without any of the testing library's hooks (checked with nm
#      against the testing library, which must hold every one of them, so that the check can fail);
#   2. a separate project (tests/consumer) finds it with find_package(xattn), links xattn::xattn, and runs;
#   3. the same project configures against the source tree through FetchContent, where xattn's tests,
#      benchmarks and test oracle must stay out of the way (configure only: the build above proves the code);
#   4. the same project builds and runs against xtensor's 0.26+ include layout, in C++20 as xtensor 0.27 needs:
#      Debian's headers rearranged (scripts/xtensor-new-layout.sh), the old paths out of reach, so an xattn header
#      that still names one (xtensor/xarray.hpp) fails to compile;
#   5. the README's C++ quick start as written builds against the installed library and prints what it says.
# `quick` (npm test, through scripts/test-native.sh) runs 1-3, `long` (npm run test:long) 1, 4 and 5; no argument
# runs them all. Each build of a project that includes xattn's headers takes the better part of a minute here.
set -euo pipefail
cd "$(dirname "$0")/.."
part="${1:-all}"
case "$part" in quick|long|all) ;; *) echo "usage: scripts/test-consumer.sh [quick|long]" >&2; exit 2 ;; esac
# The installed library comes from build/native (npm test builds it; on its own, test:long builds the library).
if [ ! -f build/native/CMakeCache.txt ]; then
  cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build/native -j"$(nproc)" --target xattn xattn_testing >/dev/null
work=build/consumer
rm -rf "$work"
prefix=$PWD/$work/prefix
cmake --install build/native --prefix "$prefix" >/dev/null

# Nothing for tests in the installed library: none of the functions the testing library adds (the pool's test
# settings and counters, the kernel set a test chooses, the probes of each set's ops) is defined in it.
hooks='xattn::kernels::(set_min_work_per_worker|set_every_worker_takes_part|helpers_asleep|helper_tasks_run|use_kernels|probes_of|avx512_probes|avx2_probes|sse41_probes|scalar_probes)\('
defined() { nm -C --defined-only "$1" | { grep -oE "$hooks" || true; } | sort -u; }
testing_has=$(defined build/native/libxattn_testing.a)
if [ "$(echo "$testing_has" | wc -l)" -ne 10 ]; then
  echo "test-consumer: the testing library should define all 10 test hooks; nm finds:" >&2
  echo "$testing_has" >&2
  exit 1
fi
installed=$(find "$prefix" -name '*.a')
if [ "$(basename "$installed")" != libxattn.a ]; then
  echo "test-consumer: the install should hold one library, libxattn.a; it holds: $installed" >&2
  exit 1
fi
shipped_has=$(defined "$installed")
if [ -n "$shipped_has" ]; then
  echo "test-consumer: the installed library defines test hooks:" >&2
  echo "$shipped_has" >&2
  exit 1
fi
echo "test-consumer: the installed library defines none of the testing library's 10 hooks"

# Exactly the public headers: src/xattn/*.hpp, never the internal kernels/ headers or the test oracle.
want=$(cd src && ls xattn/*.hpp | sort)
have=$(cd "$prefix/include" && find . -type f | sed 's|^\./||' | sort)
if [ "$want" != "$have" ]; then
  echo "test-consumer: the installed headers are not exactly src/xattn/*.hpp" >&2
  diff <(echo "$want") <(echo "$have") >&2 || true
  exit 1
fi

if [ "$part" != long ]; then
  cmake -S tests/consumer -B "$work/package" -DCMAKE_BUILD_TYPE=Release -DXATTN_CONSUMER_VIA=package \
    -DCMAKE_PREFIX_PATH="$prefix" -DXATTN_CONSUMER_MIN_CPLUSPLUS=201703L >/dev/null
  cmake --build "$work/package" -j"$(nproc)" >/dev/null
  "$work/package/consumer"

  cmake -S tests/consumer -B "$work/fetchcontent" -DXATTN_CONSUMER_VIA=fetchcontent -DXATTN_SOURCE_DIR="$PWD" >/dev/null
  echo "test-consumer: FetchContent configures xattn as a subproject without its tests"
fi
if [ "$part" != quick ]; then
  # -isysroot (GCC, Clang) swaps the system include folder for the shim's copy without xtensor/.
  shim=$PWD/$work/xtensor-new-layout
  bash scripts/xtensor-new-layout.sh "$shim"
  cmake -S tests/consumer -B "$work/new-layout" -DCMAKE_BUILD_TYPE=Release -DXATTN_CONSUMER_VIA=package \
    -DCMAKE_PREFIX_PATH="$prefix" -Dxtensor_DIR="$shim/lib/cmake/xtensor" -DCMAKE_CXX_FLAGS="-isysroot $shim/sysroot" \
    -DXATTN_CONSUMER_NEW_LAYOUT_ONLY=ON -DXATTN_CONSUMER_MIN_CPLUSPLUS=202002L >/dev/null
  cmake --build "$work/new-layout" -j"$(nproc)" >/dev/null
  "$work/new-layout/consumer"

  # The README's C++ quick start as written (its cmake and cpp blocks), against the installed prefix: it builds,
  # runs and prints what its `// →` comments say (blanks aside, as for the README's JavaScript).
  readme=$work/readme
  node tests/consumer/readme-project.mjs "$readme"
  cmake -S "$readme" -B "$readme/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$readme/build" -j"$(nproc)" >/dev/null
  "$readme/build/app" > "$readme/printed.txt"
  if ! diff <(tr -d ' \t' < "$readme/expected.txt") <(tr -d ' \t' < "$readme/printed.txt") >/dev/null; then
    echo "test-consumer: the README's C++ example printed something else than it says" >&2
    diff "$readme/expected.txt" "$readme/printed.txt" >&2 || true
    exit 1
  fi
  echo "test-consumer: the README's C++ example builds against the installed library and prints what it says"
fi
