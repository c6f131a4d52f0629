// The ops type each SIMD kernel file computes in, named once for that file (arch_*.cpp) and for the testing
// build's probes of its ops (tests/kernel_probes/), which are compiled with the same flags. Each name exists
// where the including file's flags give its instruction set; the scalar files use ScalarOps (simd_scalar.hpp).
#pragma once

// GCC 12's AVX-512 intrinsics start from a deliberately undefined register (`__Y = __Y`), which its
// uninitialized-use warnings report wherever one is inlined (GCC bug 105593, fixed in GCC 13): off for the rest of
// a file built for AVX-512F, before its first intrinsic.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if defined(__SSE4_1__)
#include "kernels/simd_xsimd.hpp"
#if defined(__wasm_relaxed_simd__)
#include "kernels/simd_relaxed.hpp"
#endif
#endif

namespace xattn::kernels {
namespace {
#if defined(__AVX512F__)
using Avx512Ops = XsimdOps<xsimd::avx512f>;
#endif
#if defined(__AVX2__) && defined(__FMA__)
using Avx2Ops = XsimdOps<xsimd::fma3<xsimd::avx2>>;
#endif
#if defined(__SSE4_1__)
#if defined(__wasm_relaxed_simd__)
using Sse41Ops = RelaxedOps<xsimd::sse4_1>;  // every a·b + c one f32x4.relaxed_madd
#else
using Sse41Ops = XsimdOps<xsimd::sse4_1>;
#endif
#endif
}  // namespace
}  // namespace xattn::kernels
