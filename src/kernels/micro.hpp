// The one register-blocked micro-kernel every product in xattn runs on:
//
//   C[r][v] += Σ_k a[r·a_row + k·a_k] · B[k][v]      C: R rows × NV vectors, held in registers
//
// a is read one element at a time and broadcast (any strides: K rows, a transposed tile, X rows),
// B one vector at a time from rows ldb floats apart. The three products instantiate it as
//   scores   Sᵀ (keys, queries)   = K (S, E) · Qᵀ (E, queries)      a = K rows,  B = packed Qᵀ
//   output   O  (queries, Ev)     = P (queries, keys) · V (keys, Ev) a = P,       B = V rows
//   linear   Y  (rows, out)       = X (rows, in) · Wᵀ (in, out)      a = X rows,  B = packed Wᵀ
// R·NV independent accumulators hide the add latency; the arch files pick R and NV so they fit the
// registers (wasm: 8 — V8 spills past ~12 live vectors; AVX2: 12 of 16 ymm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#define XATTN_INLINE inline __attribute__((always_inline))
// For the functions that hold a hot loop: kept out of their callers, so that the engine allocates registers for
// the loop in a small function (see src/kernels/README.md, "Registers in V8").
#define XATTN_NOINLINE __attribute__((noinline))

namespace xattn::kernels {
namespace {

template <class O, std::size_t R, std::size_t NV>
struct Block {
    typename O::V c[R][NV];

    XATTN_INLINE void fill(const typename O::V& x) {
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t v = 0; v < NV; ++v) c[r][v] = x;
    }
    // Rows of C from memory, `ld` elements apart.
    template <class T>
    XATTN_INLINE void load(const T* p, std::size_t ld) {
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t v = 0; v < NV; ++v) c[r][v] = O::load(p + r * ld + v * O::width);
    }
    template <class T>
    XATTN_INLINE void store(T* p, std::size_t ld) const {
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t v = 0; v < NV; ++v) O::store(p + r * ld + v * O::width, c[r][v]);
    }
};

// A B operand's vector: floats as they are; float16 storage as its bits (value · 2^-112, finite halves only;
// simd_xsimd.hpp), for callers that fold 2^112 into a.
template <class O>
XATTN_INLINE typename O::V load_operand(const float* p) { return O::load(p); }
template <class O>
XATTN_INLINE typename O::V load_operand(const std::uint16_t* p) { return O::load_half_bits(p); }

template <class O, std::size_t R, std::size_t NV, class TA, class TB>
XATTN_INLINE void accumulate(Block<O, R, NV>& acc, std::size_t K, const TA* a, std::size_t a_row,
                             std::size_t a_k, const TB* b, std::size_t ldb) {
    using V = typename O::V;
    if constexpr (R == 1) {
        // One row uses each B vector once: loaded beside its product, it needs one register, not NV (so that
        // V8 keeps a 1 × 8 block in registers; the same sums in the same order).
        for (std::size_t k = 0; k < K; ++k, a += a_k, b += ldb) {
            const V ar = O::splat(a[0]);
            for (std::size_t v = 0; v < NV; ++v) acc.c[0][v] = O::fmadd(ar, load_operand<O>(b + v * O::width), acc.c[0][v]);
        }
        return;
    }
    for (std::size_t k = 0; k < K; ++k, a += a_k, b += ldb) {
        V bk[NV];
        for (std::size_t v = 0; v < NV; ++v) bk[v] = load_operand<O>(b + v * O::width);
        for (std::size_t r = 0; r < R; ++r) {
            const V ar = O::splat(a[r * a_row]);
            for (std::size_t v = 0; v < NV; ++v) acc.c[r][v] = O::fmadd(ar, bk[v], acc.c[r][v]);
        }
    }
}

// The same product where a zero in `a` contributes nothing even when B holds inf or NaN
// (0·inf would be NaN): used for value tiles that are not all finite.
template <class O, std::size_t R, std::size_t NV>
XATTN_INLINE void accumulate_skipping_zeros(Block<O, R, NV>& acc, std::size_t K, const float* a, std::size_t a_row,
                                            std::size_t a_k, const float* b, std::size_t ldb) {
    using V = typename O::V;
    for (std::size_t k = 0; k < K; ++k, a += a_k, b += ldb) {
        V bk[NV];
        for (std::size_t v = 0; v < NV; ++v) bk[v] = O::load(b + v * O::width);
        for (std::size_t r = 0; r < R; ++r) {
            const V ar = O::splat(a[r * a_row]);
            const auto zero = ar == O::splat(0.0f);
            for (std::size_t v = 0; v < NV; ++v) acc.c[r][v] = O::select(zero, acc.c[r][v], O::fmadd(ar, bk[v], acc.c[r][v]));
        }
    }
}

// Calls f(std::integral_constant<size_t, n>) for a runtime n in [1, Max]: the tails of a
// dimension run the same code with a smaller compile-time block.
template <std::size_t Max, class F>
XATTN_INLINE void with_count(std::size_t n, F&& f) {
    if constexpr (Max == 1) {
        f(std::integral_constant<std::size_t, 1>{});
    } else {
        if (n >= Max) f(std::integral_constant<std::size_t, Max>{});
        else with_count<Max - 1>(n, std::forward<F>(f));
    }
}

}  // namespace
}  // namespace xattn::kernels
