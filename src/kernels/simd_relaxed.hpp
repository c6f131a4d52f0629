// The SSE4.1 / wasm SIMD128 ops with one change: a·b + c is one f32x4.relaxed_madd. Only a build compiled
// with -mrelaxed-simd (clang 16 or later: Emscripten 3.1.6's clang 14 writes pre-standard opcodes that
// engines refuse) includes this file.
//
// relaxed_madd lets the engine fuse (one rounding, where the CPU has FMA) or not (two roundings, as a mul
// and an add): the kernels' results may differ in the last bits between CPUs, never beyond what the plain
// SIMD and the AVX2+FMA sets already differ by. V8 emits the same instruction for it in both tiers, so
// one machine gives one result, whatever the tier and the thread count.
#pragma once

#if !defined(__wasm_relaxed_simd__)
#error "simd_relaxed.hpp needs -mrelaxed-simd"
#endif

#include "kernels/simd_xsimd.hpp"

namespace xattn::kernels {
namespace {

template <class Arch>
struct RelaxedOps : XsimdOps<Arch> {
    using V = typename XsimdOps<Arch>::V;
    // The one op that changes; exp, the finite checks and every micro-kernel reach it as O::fmadd.
    static V fmadd(const V& a, const V& b, const V& c) {
        using f32x4 = float __attribute__((__vector_size__(16)));
        const __m128 r = static_cast<__m128>(__builtin_wasm_relaxed_madd_f32x4(
            static_cast<f32x4>(static_cast<__m128>(a)), static_cast<f32x4>(static_cast<__m128>(b)),
            static_cast<f32x4>(static_cast<__m128>(c))));
        return V(r);
    }
};

}  // namespace
}  // namespace xattn::kernels
