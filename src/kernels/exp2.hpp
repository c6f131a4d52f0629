// The softmax's exp, for x <= 0 (and -inf, NaN) on any ops type of simd_scalar.hpp / simd_xsimd.hpp: every
// argument is a score minus its row's running max. e^x is taken as 2^(x · log2 e), because a float exp2 needs
// no Cody–Waite split of ln 2 to reduce its argument: 20 vector ops where an exp accurate for its own
// argument took 23.
//
// Accuracy: exp2_nonpositive is within 2 ULP of the float nearest to 2^x for x >= -126 (checked against
// std::exp2 in tests/test_kernels.cpp); below x = -126.5 (2^-126.5 is under FLT_MIN) it is exactly 0,
// exp2(-inf) = 0, and NaN stays NaN. Between the two it is 2^x, possibly subnormal.
// exp_nonpositive adds the rounding of x · log2 e: a relative error of about |x| · 2^-24 more, which is the
// size of the rounding already in x (a difference of two float scores) and at most 3e-8 of a weight e^x ≤ 1.
#pragma once

namespace xattn::kernels {
namespace {

constexpr float kLog2e = 1.44269504088896341f;

template <class O>
inline typename O::V exp2_nonpositive(typename O::V x) {
    using V = typename O::V;
    // Underflow without a select: x is raised to -127 (pmax keeps a NaN x; -inf, a masked score, becomes
    // -127), where n below is -127, whose 2^n pow2_of_rounded makes +0 (its integer sum carries out of the
    // word), so the result is exactly 0 below x = -126.5, with no subnormal product on the way. This pass
    // runs once per score: a compare and two selects would be 3 more of its 20 instructions.
    x = O::pmax(x, O::splat(-127.0f));

    // x = n + r with |r| <= 1/2. Adding 1.5·2^23 rounds x to the integer n in the low bits; x − n is exact.
    const V magic = O::splat(12582912.0f);
    const V t = x + magic;
    const V r = x - (t - magic);

    // 2^r = 1 + r·Q(r), Q of degree 5 fitted for relative error 2e-9 on [-1/2, 1/2]
    // (src/kernels/fit_exp2.py); the remaining error is the float rounding of the steps.
    V q = O::splat(1.535336181e-4f);
    q = O::fmadd(q, r, O::splat(1.339887445e-3f));
    q = O::fmadd(q, r, O::splat(9.618437358e-3f));
    q = O::fmadd(q, r, O::splat(5.550332471e-2f));
    q = O::fmadd(q, r, O::splat(2.402264791e-1f));
    q = O::fmadd(q, r, O::splat(6.931472029e-1f));
    const V p = O::fmadd(q, r, O::splat(1.0f));

    return p * O::pow2_of_rounded(t);
}

template <class O>
inline typename O::V exp_nonpositive(typename O::V x) {
    return exp2_nonpositive<O>(x * O::splat(kLog2e));  // -inf stays -inf, NaN NaN, x <= 0 stays <= 0
}

}  // namespace
}  // namespace xattn::kernels
