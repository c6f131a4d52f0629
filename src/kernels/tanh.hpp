// tanh for the soft-cap (scores = c · tanh(scores / c)) on any ops type of simd_scalar.hpp / simd_xsimd.hpp.
//
//   |x| < 0.625   x · (1 + u · P(u)), u = x², P of degree 4 fitted for relative error 4.4e-9
//                 (src/kernels/fit_tanh.py): near 0, where (1 − e) / (1 + e) would lose its digits to cancellation
//   otherwise     sign(x) · (1 − e) / (1 + e), e = e^(−2|x|) ≤ e^(−1.25) (exp_nonpositive): no cancellation
//
// Within a few float roundings of tanh everywhere (every set's soft-capped scores are checked against
// c · tanh(s / c) in tests/test_sdpa_rules.cpp); ±inf give ±1 and NaN stays NaN.
#pragma once

#include "kernels/exp2.hpp"

namespace xattn::kernels {
namespace {

template <class O>
inline typename O::V tanh_of(typename O::V x) {
    using V = typename O::V;
    const V ax = O::max(x, V(-x));  // |x|; a NaN stays
    const V u = x * x;
    V q = O::splat(-5.704987417e-03f);
    q = O::fmadd(q, u, O::splat(2.063908765e-02f));
    q = O::fmadd(q, u, O::splat(-5.373971522e-02f));
    q = O::fmadd(q, u, O::splat(1.333144220e-01f));
    q = O::fmadd(q, u, O::splat(-3.333328194e-01f));
    const V small = O::fmadd(x * u, q, x);
    const V e = exp_nonpositive<O>(ax * O::splat(-2.0f));
    const V large = (O::splat(1.0f) - e) / (O::splat(1.0f) + e);
    return O::select(ax < O::splat(0.625f), small, O::select(x < O::splat(0.0f), V(-large), large));
}

}  // namespace
}  // namespace xattn::kernels
