// GELU in its exact (erf) form, 0.5 · x · (1 + erf(x / sqrt 2)), and its derivative, on one float32: what the
// activation passes (layer_ops.cpp) compute for each value, and what the tests check against float64 erf.
// Not installed: an implementation header.
#pragma once

#include "kernels/exp2.hpp"
#include "kernels/simd_scalar.hpp"

namespace xattn::detail {

// erf(u) = u · P(u²) / Q(u²) for |u| <= 3.92, beyond which erf rounds to ±1 in float32: a rational fit within
// 1.4e-9 of erf (src/fit_erf.py); evaluated in float32 it is within 3.5e-7 (6 units in the last place of 1).
inline float erf_rational(float u) {
    const float c = u > 3.92f ? 3.92f : u < -3.92f ? -3.92f : u;  // a NaN u stays NaN (and so does r)
    const float t = c * c;
    float p = -1.333473948e-08f;
    p = p * t + 4.717557208e-06f;
    p = p * t + 3.803619281e-04f;
    p = p * t + 3.832353717e-03f;
    p = p * t + 5.427813749e-02f;
    p = p * t + 1.847012611e-01f;
    p = p * t + 1.128379181e+00f;
    float q = 6.341667150e-05f;
    q = q * t + 1.305011334e-03f;
    q = q * t + 1.543086364e-02f;
    q = q * t + 1.137754276e-01f;
    q = q * t + 4.970207591e-01f;
    q = q * t + 1.0f;
    const float r = c * p / q;
    return u > 3.92f ? 1.0f : u < -3.92f ? -1.0f : r;  // exactly ±1 past the clamp: GELU is 0 or x there
}

constexpr float kInvSqrt2 = 0.707106781186547524f;
constexpr float kInvSqrt2Pi = 0.398942280401432678f;

inline float gelu(float x) { return 0.5f * x * (1.0f + erf_rational(x * kInvSqrt2)); }

// Φ(x) + x · φ(x): the normal CDF and x times its density.
inline float gelu_derivative(float x) {
    const float cdf = 0.5f * (1.0f + erf_rational(x * kInvSqrt2));
    const float density = kInvSqrt2Pi * kernels::exp_nonpositive<kernels::ScalarOps>(-0.5f * x * x);
    return cdf + x * density;
}

}  // namespace xattn::detail
