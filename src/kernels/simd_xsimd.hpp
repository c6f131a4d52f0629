// The vector operations the kernels are written in, on xsimd batches of one architecture:
// avx512f and fma3<avx2> natively, sse4_1 natively and in WebAssembly (Emscripten lowers the SSE
// intrinsics to SIMD128). Include only from a file compiled for that architecture.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace xattn::kernels {
namespace {

template <class Arch>
struct XsimdOps {
    using V = xsimd::batch<float, Arch>;
    using M = xsimd::batch_bool<float, Arch>;
    using I = xsimd::batch<std::int32_t, Arch>;
    static constexpr std::size_t width = V::size;
    // The set that needs its own intrinsics where xsimd 8.1 has none for plain AVX-512F (fmadd, hsum, load_i16).
    static constexpr bool is_avx512 = std::is_same_v<Arch, xsimd::avx512f>;

    static V load(const float* p) { return V::load_unaligned(p); }
    static void store(float* p, const V& v) { v.store_unaligned(p); }
    static V splat(float x) { return V(x); }
    // a·b + c: one fused instruction on fma3, a multiply and an add elsewhere (wasm has no FMA in Node 20).
    static V fmadd(const V& a, const V& b, const V& c) {
#if defined(__AVX512F__)
        // xsimd 8.1 has no fma for avx512f (its generic one is a multiply and an add).
        if constexpr (is_avx512) return V(_mm512_fmadd_ps(a, b, c));
#endif
        return xsimd::fma(a, b, c);
    }
    static V max(const V& a, const V& b) { return xsimd::max(a, b); }
    // b where a < b, else a: a NaN in a is kept, one in b is not. One instruction on every set: wasm's
    // f32x4.pmax, and maxps(b, a) natively (x86 returns its second operand when either is NaN). Emscripten's
    // _mm_max_ps, which xsimd's max reaches in wasm, is a compare and a bitselect (four instructions in V8).
    static V pmax(const V& a, const V& b) {
#if defined(__wasm_simd128__)
        return V(static_cast<__m128>(wasm_f32x4_pmax(static_cast<v128_t>(static_cast<__m128>(a)),
                                                     static_cast<v128_t>(static_cast<__m128>(b)))));
#else
        return xsimd::max(b, a);
#endif
    }
    static V select(const M& m, const V& a, const V& b) {
#if defined(__wasm_simd128__)
        // Comparison results are whole-lane masks, so one bitselect does; SSE4.1's blendv
        // would be emulated by a shift and a bitselect.
        return V(static_cast<__m128>(wasm_v128_bitselect(static_cast<v128_t>(static_cast<__m128>(a)),
                                                         static_cast<v128_t>(static_cast<__m128>(b)),
                                                         static_cast<v128_t>(static_cast<__m128>(m)))));
#else
        return xsimd::select(m, a, b);
#endif
    }
    // 2^n for t = n + 1.5·2^23: the low bits of t hold n, so shifting them into the exponent field
    // needs only integer shift and add (a float-to-int conversion is a scalar loop in Emscripten's SSE).
    static V pow2_of_rounded(const V& t) {
        I bits = xsimd::bitwise_cast<I>(t);
        bits = (bits << 23) + I(127 << 23);
        return xsimd::bitwise_cast<V>(bits);
    }
    static float hsum(const V& v) {
#if defined(__AVX512F__)
        // xsimd 8.1's avx512f hadd uses an AVX-512DQ instruction.
        if constexpr (is_avx512) return _mm512_reduce_add_ps(v);
        else
#endif
        return xsimd::hadd(v);
    }
    // W float16 values as their bits moved into a float's fields: value · 2^-112, exactly, for every finite half
    // (normals, subnormals, zero), in 3 vector ops: sign-extend to 32-bit lanes, shift the exponent and
    // mantissa into place, keep the sign bit (clearing the extension's copies of it). Kernels that know a tile
    // holds no inf or NaN read it this way and fold 2^112 into the other operand (an exact power of two, so
    // every product is the one the widened values give).
    static V load_half_bits(const std::uint16_t* p) {
        return xsimd::bitwise_cast<V>((load_i16(p) << 13) & I(static_cast<std::int32_t>(0x8fffe000u)));
    }
    // W 16-bit integers, sign-extended to the 32-bit lanes.
    static I load_i16(const std::uint16_t* p) {
#if defined(__AVX512F__)
        if constexpr (is_avx512) return I(_mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
        else
#endif
#if defined(__AVX2__)
        return I(_mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif defined(__wasm_simd128__)
        return I(static_cast<__m128i>(wasm_i32x4_load16x4(p)));  // one v128.load16x4_s
#else
        return I(_mm_cvtepi16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#endif
    }
    // W float16 values (kernels/half.hpp has the scalar rule) as floats: the bits times 2^112. Exponent all
    // ones (inf, NaN) comes out at 2^16 or more in magnitude, past the largest finite half: those keep their
    // own bits, with the exponent field filled.
    static V load_half(const std::uint16_t* p) {
        const V bits = load_half_bits(p);
        const V f = bits * V(0x1p112f);
        const V special = xsimd::bitwise_cast<V>(xsimd::bitwise_cast<I>(bits) | I(0x7f800000));
        return select(xsimd::abs(f) >= V(65536.0f), special, f);
    }
    // Tiles are transposes (mask rows into a score tile, a score tile into weights rows; attention.hpp):
    // 4 × 4 at a time with SSE shuffles (plain SSE in the AVX2 build, i8x16.shuffle in wasm).
    static constexpr bool has_transpose4 = true;
    // dst[j·ld + l] = rows[l][j] for l, j < 4.
    static void transpose4(const float* const rows[4], float* dst, std::size_t ld) {
        __m128 a = _mm_loadu_ps(rows[0]), b = _mm_loadu_ps(rows[1]), c = _mm_loadu_ps(rows[2]), d = _mm_loadu_ps(rows[3]);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _mm_storeu_ps(dst, a), _mm_storeu_ps(dst + ld, b), _mm_storeu_ps(dst + 2 * ld, c), _mm_storeu_ps(dst + 3 * ld, d);
    }
    // The same for boolean mask bytes: 0 where allowed (non-zero), -inf where forbidden.
    static void transpose4(const std::uint8_t* const rows[4], float* dst, std::size_t ld) {
        auto expand = [](const std::uint8_t* p) {
            std::int32_t four;
            std::memcpy(&four, p, 4);
            const __m128i bytes = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(four));
            const __m128i forbidden = _mm_cmpeq_epi32(bytes, _mm_setzero_si128());
            return _mm_and_ps(_mm_castsi128_ps(forbidden), _mm_set1_ps(-std::numeric_limits<float>::infinity()));
        };
        __m128 a = expand(rows[0]), b = expand(rows[1]), c = expand(rows[2]), d = expand(rows[3]);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _mm_storeu_ps(dst, a), _mm_storeu_ps(dst + ld, b), _mm_storeu_ps(dst + 2 * ld, c), _mm_storeu_ps(dst + 3 * ld, d);
    }
    static V lane_index() {
        alignas(64) float lanes[width];
        for (std::size_t i = 0; i < width; ++i) lanes[i] = static_cast<float>(i);
        return V::load_aligned(lanes);
    }
};


}  // namespace
}  // namespace xattn::kernels
