// The single-thread arithmetic peak, measured in the same process as the kernels so a busy machine
// slows both: independent vector chains kept in registers (the limits in shared/notes/peers.md).
#pragma once

#include <chrono>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__x86_64__)
#include <immintrin.h>
#endif

namespace bench {

// GFLOP/s of the widest float multiply-add this build can issue (best of 20 short runs), or 0 when
// there is none.
#if defined(__wasm_simd128__)
__attribute__((noinline)) inline double peak_once() {
    // wasm has no FMA in Node 20: 7 multiply chains and 7 add chains of f32x4, as web/src/speed/simd-peak.js has them
    // (why 7 and one shared constant: see there).
    v128_t m0 = wasm_f32x4_splat(1.0f), m1 = wasm_f32x4_splat(1.1f), m2 = wasm_f32x4_splat(1.2f),
           m3 = wasm_f32x4_splat(1.3f), m4 = wasm_f32x4_splat(1.4f), m5 = wasm_f32x4_splat(1.5f),
           m6 = wasm_f32x4_splat(1.6f);
    v128_t a0 = m0, a1 = m1, a2 = m2, a3 = m3, a4 = m4, a5 = m5, a6 = m6;
    const v128_t f = wasm_f32x4_splat(0.9999999f);
    const long iters = 2000000;
    const auto t0 = std::chrono::steady_clock::now();
    for (long it = 0; it < iters; ++it) {
        m0 = wasm_f32x4_mul(m0, f), m1 = wasm_f32x4_mul(m1, f), m2 = wasm_f32x4_mul(m2, f), m3 = wasm_f32x4_mul(m3, f);
        m4 = wasm_f32x4_mul(m4, f), m5 = wasm_f32x4_mul(m5, f), m6 = wasm_f32x4_mul(m6, f);
        a0 = wasm_f32x4_add(a0, f), a1 = wasm_f32x4_add(a1, f), a2 = wasm_f32x4_add(a2, f), a3 = wasm_f32x4_add(a3, f);
        a4 = wasm_f32x4_add(a4, f), a5 = wasm_f32x4_add(a5, f), a6 = wasm_f32x4_add(a6, f);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const v128_t m = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(m0, m1), wasm_f32x4_add(m2, m3)),
                                    wasm_f32x4_add(wasm_f32x4_add(m4, m5), m6));
    const v128_t a = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3)),
                                    wasm_f32x4_add(wasm_f32x4_add(a4, a5), a6));
    const v128_t all = wasm_f32x4_add(m, a);
    return wasm_f32x4_extract_lane(all, 0) == 12345.0f ? 0.0 : iters * 14.0 * 4 / s * 1e-9;
}
#elif defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"), noinline)) inline double peak_once() {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0.0;
    __m256 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(1.0f + i * 1e-3f);
    const __m256 f = _mm256_set1_ps(0.9999999f), d = _mm256_set1_ps(1e-7f);
    const long iters = 2000000;
    const auto t0 = std::chrono::steady_clock::now();
    for (long it = 0; it < iters; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], f, d);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float sink = 0;
    for (int i = 0; i < 12; ++i) sink += _mm256_cvtss_f32(acc[i]);
    return sink == 12345.0f ? 0.0 : iters * 12.0 * 16 / s * 1e-9;
}
// The same with 512-bit registers, for the avx512f kernels: 16 chains (two FMA pipes of latency 4 need 8;
// 32 registers leave room for twice that).
__attribute__((target("avx512f"), noinline)) inline double peak512_once() {
    if (!__builtin_cpu_supports("avx512f")) return 0.0;
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
    const __m512 f = _mm512_set1_ps(0.9999999f), d = _mm512_set1_ps(1e-7f);
    const long iters = 1000000;
    const auto t0 = std::chrono::steady_clock::now();
    for (long it = 0; it < iters; ++it)
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], f, d);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float sink = 0;
    for (int i = 0; i < 16; ++i) sink += _mm512_cvtss_f32(acc[i]);
    return sink == 12345.0f ? 0.0 : iters * 16.0 * 32 / s * 1e-9;
}
#define XATTN_BENCH_HAS_PEAK512 1
#else
inline double peak_once() { return 0.0; }
#endif

template <class F>
double best_of_20(F once) {
    double best = 0.0;
    for (int i = 0; i < 20; ++i) {
        const double g = once();
        best = g > best ? g : best;
    }
    return best;
}
inline double peak_gflops() { return best_of_20(peak_once); }
// The AVX-512F FMA peak, or 0 where the CPU (or the build) has none.
#if defined(XATTN_BENCH_HAS_PEAK512)
inline double peak512_gflops() { return best_of_20(peak512_once); }
#else
inline double peak512_gflops() { return 0.0; }
#endif

}  // namespace bench
