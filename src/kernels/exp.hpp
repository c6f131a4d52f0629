// exp(x) for x <= 0 (and -inf, NaN) on any ops type of simd_scalar.hpp / simd_xsimd.hpp: the only
// exp the softmax needs, since every argument is a score minus its row's running max.
//
// Accuracy: within 2 ULP of the float nearest to e^x for x >= -87 (checked against std::exp in
// tests/test_kernels.cpp); below -87 (e^-87 = 1.6e-38, near FLT_MIN) the result is 0, exp(-inf) = 0,
// and NaN stays NaN.
#pragma once

namespace xattn::kernels {
namespace {

template <class O>
inline typename O::V exp_nonpositive(typename O::V x) {
    using V = typename O::V;
    // Near and below ln(FLT_MIN) = -87.34 the result would be subnormal: return 0 below -87 (also for
    // -inf). The margin matters for speed, not accuracy: a product with a subnormal result costs
    // a microcode assist, and masked scores (-inf) all take this path.
    const V lowest = O::splat(-87.0f);
    const auto underflow = x < lowest;
    x = O::select(underflow, lowest, x);  // a select, not max(): max would turn NaN into `lowest`

    // x = n·ln2 + r with |r| <= ln2/2. Adding 1.5·2^23 rounds x·log2(e) to the integer n in the low bits.
    const V magic = O::splat(12582912.0f);
    const V t = O::fmadd(x, O::splat(1.44269504f), magic);
    const V n = t - magic;
    // Cody–Waite: ln2 split so that n·ln2_hi is exact (ln2_hi has 11 significant bits, |n| <= 126).
    V r = O::fmadd(n, O::splat(-0.693359375f), x);
    r = O::fmadd(n, O::splat(2.12194440e-4f), r);

    // e^r = 1 + r + r²·P(r), P of degree 4 fitted for relative error 3e-9 on [-ln2/2, ln2/2]
    // (src/kernels/fit_exp.py); the remaining error is the float rounding of the steps.
    V p = O::splat(1.381461298e-3f);
    p = O::fmadd(p, r, O::splat(8.368709843e-3f));
    p = O::fmadd(p, r, O::splat(4.166838737e-2f));
    p = O::fmadd(p, r, O::splat(1.666652069e-1f));
    p = O::fmadd(p, r, O::splat(4.999999345e-1f));
    const V r2 = r * r;
    p = O::fmadd(p, r2, r) + O::splat(1.0f);

    const V y = p * O::pow2_of_rounded(t);
    return O::select(underflow, O::splat(0.0f), y);
}

}  // namespace
}  // namespace xattn::kernels
