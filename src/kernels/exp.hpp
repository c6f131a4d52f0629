// exp(x) for x <= 0 (and -inf, NaN) on any ops type of simd_scalar.hpp / simd_xsimd.hpp: the only
// exp the softmax needs, since every argument is a score minus its row's running max.
//
// Accuracy: within 2 ULP of the float nearest to e^x for x >= -87 (checked against std::exp in
// tests/test_kernels.cpp); below -87.68 (= -126.5·ln 2; e^-87.68 = 8.3e-39, under FLT_MIN) the result is
// exactly 0, exp(-inf) = 0, and NaN stays NaN. Between the two it is e^x, possibly subnormal.
#pragma once

namespace xattn::kernels {
namespace {

template <class O>
inline typename O::V exp_nonpositive(typename O::V x) {
    using V = typename O::V;
    // Underflow without a select: x is raised to -88 (pmax keeps a NaN x; -inf, a masked score, becomes -88),
    // where n below is -127, whose 2^n pow2_of_rounded makes +0 (its integer sum carries out of the word), so
    // the result is exactly 0 from x <= -87.68 on, with no subnormal product on the way. This pass runs once
    // per score: a compare and two selects were 7 of its 40 or so instructions in V8's code.
    x = O::pmax(x, O::splat(-88.0f));

    // x = n·ln2 + r with |r| <= ln2/2. Adding 1.5·2^23 rounds x·log2(e) to the integer n in the low bits.
    const V magic = O::splat(12582912.0f);
    const V t = O::fmadd(x, O::splat(1.44269504f), magic);
    const V n = t - magic;
    // Cody–Waite: ln2 split so that n·ln2_hi is exact (ln2_hi has 11 significant bits, |n| <= 127).
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

    return p * O::pow2_of_rounded(t);
}

}  // namespace
}  // namespace xattn::kernels
