// float16 (IEEE binary16) storage for the KV cache: rounding floats to halves on append (round to nearest,
// ties to even, as every hardware conversion does) and widening them back, scalar. The kernels widen
// whole vectors with the ops' load_half; this is the rule they agree with (tests/test_kv_cache.cpp checks
// every one of the 65,536 halves).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace xattn::kernels {
namespace {

inline float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t em = h & 0x7fffu;
    std::uint32_t bits;
    if (em >= 0x7c00u) {
        bits = sign | 0x7f800000u | ((em & 0x3ffu) << 13);  // inf, or NaN keeping its payload
    } else {
        // The half's exponent and mantissa moved into a float's field read 2^-112 times the value, exactly
        // (subnormal halves become subnormal floats): multiply back.
        float scaled;
        const std::uint32_t shifted = em << 13;
        std::memcpy(&scaled, &shifted, 4);
        scaled *= 0x1p112f;
        std::memcpy(&bits, &scaled, 4);
        bits |= sign;
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline std::uint16_t float_to_half(float f) {
    std::uint32_t x;
    std::memcpy(&x, &f, 4);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN (quiet), inf
    if (x >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to inf
    if (x < 0x38800000u) {
        // Below 2^-14: a subnormal half, a multiple of 2^-24; nearbyint rounds ties to even.
        float a;
        std::memcpy(&a, &x, 4);
        return sign | static_cast<std::uint16_t>(std::nearbyint(a * 0x1p24f));
    }
    // Normal: drop 13 mantissa bits, rounding to nearest with ties to even, and rebias 127 -> 15.
    x += 0xfffu + ((x >> 13) & 1u);
    return sign | static_cast<std::uint16_t>((x - 0x38000000u) >> 13);
}

}  // namespace
}  // namespace xattn::kernels
