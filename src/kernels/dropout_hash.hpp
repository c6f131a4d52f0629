// The dropout decision as a pure function of (seed, position), shared by xattn::dropout_keeps and
// the kernels.
//
// Why the kernel headers wrap everything in an unnamed namespace: each per-arch file compiles them
// with its own instruction set (-mavx2, -msse4.1, none). Inline functions with external linkage would
// be merged by the linker, which could hand the AVX2 copy to the code that runs on any x86.
// Internal linkage gives every file its own copy.
#pragma once

#include <cmath>
#include <cstdint>

namespace xattn::kernels {
namespace {

// splitmix64 finaliser: counter-based, so the decision does not depend on the visiting order.
inline std::uint64_t splitmix64(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Keep iff u >= p with u = (h >> 11) · 2^-53 uniform in [0, 1). Both sides scaled by 2^53 are exact,
// and (h >> 11) is an integer, so the test is (h >> 11) >= ceil(p · 2^53): no double per weight.
inline std::uint64_t dropout_threshold(double p) {
    return static_cast<std::uint64_t>(std::ceil(std::ldexp(p, 53)));
}

inline bool dropout_keep(std::uint64_t seed, std::uint64_t threshold, std::uint64_t position) {
    return (splitmix64(seed ^ splitmix64(position)) >> 11) >= threshold;
}

}  // namespace
}  // namespace xattn::kernels
