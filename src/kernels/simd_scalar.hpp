// The vector operations the kernels are written in, for one float at a time: the portable build
// (wasm without SIMD, or a CPU without SSE4.1) runs the same blocked kernels through these.
// Internal linkage on purpose: see dropout_hash.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/half.hpp"

namespace xattn::kernels {
namespace {

struct ScalarOps {
    using V = float;
    using M = bool;
    static constexpr std::size_t width = 1;

    static V load(const float* p) { return *p; }
    static void store(float* p, V v) { *p = v; }
    static V splat(float x) { return x; }
    static V fmadd(V a, V b, V c) { return a * b + c; }
    static V max(V a, V b) { return a > b ? a : b; }
    static V pmax(V a, V b) { return a < b ? b : a; }  // as XsimdOps::pmax: a NaN in a is kept
    static V select(M m, V a, V b) { return m ? a : b; }
    // 2^n for t = n + 1.5·2^23 (n an integer the float addition already rounded).
    static V pow2_of_rounded(V t) {
        std::uint32_t bits;
        std::memcpy(&bits, &t, 4);
        bits = (bits << 23) + (127u << 23);
        float r;
        std::memcpy(&r, &bits, 4);
        return r;
    }
    static float hsum(V v) { return v; }
    static V load_half(const std::uint16_t* p) { return half_to_float(*p); }
    // The half's bits moved into a float's fields: value · 2^-112 for a finite half (simd_xsimd.hpp).
    static V load_half_bits(const std::uint16_t* p) {
        const std::uint32_t s = static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int16_t>(*p)));
        const std::uint32_t bits = (s << 13) & 0x8fffe000u;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    // Lane indices 0, 1, … as floats.
    static V lane_index() { return 0.0f; }
    static constexpr bool has_transpose4 = false;  // tiles are transposed one float at a time
};


}  // namespace
}  // namespace xattn::kernels
