// Loops over whole arrays on one ops type, shared by the wide (attention.hpp) and decoding
// (attention_decode.hpp) kernels. Internal linkage, like every kernel header: see src/kernels/README.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/half.hpp"

namespace xattn::kernels {
namespace {

// Whether x[0, n) holds no inf or NaN: x·0 is 0 for every finite x and NaN otherwise.
template <class O>
bool all_finite(const float* x, std::size_t n) {
    typename O::V acc = O::splat(0.0f);
    std::size_t i = 0;
    for (; i + O::width <= n; i += O::width) acc = O::fmadd(O::load(x + i), O::splat(0.0f), acc);
    float tail = O::hsum(acc);
    for (; i < n; ++i) tail += x[i] * 0.0f;
    return tail == 0.0f;
}

// One pass over x[0, n), 3 vector ops an element (a negate, a max, an add): the sum of |x| is inf or NaN
// when x holds inf or NaN (or values so large that their sum overflows: then `finite` is false
// conservatively, and the caller takes its careful path), and, being at least max |x|, it bounds every
// |x| for `below`. No multiply on the way: the first version summed the squares of x·2^-64, which are
// subnormal for every |x| < 2, and Intel cores take a microcode assist (about a hundred cycles) on each
// subnormal result, which slowed every attention kernel there several times over (AMD cores take no such
// assist; tests/test_subnormals.cpp keeps kernels from making subnormals). Here only a subnormal x itself is.
struct Scan {
    bool finite;
    bool below;  // every |x[i]| < limit (implies finite)
};
template <class O>
Scan scan_values(const float* x, std::size_t n, float limit) {
    typename O::V sum = O::splat(0.0f);
    std::size_t i = 0;
    for (; i + O::width <= n; i += O::width) {
        const typename O::V v = O::load(x + i);
        sum = sum + O::pmax(v, -v);  // |v|, NaN kept (pmax keeps a NaN first operand)
    }
    float total = O::hsum(sum);
    for (; i < n; ++i) total += x[i] < -x[i] ? -x[i] : x[i];
    const bool finite = total - total == 0.0f;
    // A float sum of n >= 0 terms is within a relative n·2^-24 of the true one: under half of it for the
    // tiles scanned here (fewer than 2^23 values), so comparing against limit / 2 keeps `below` sound.
    return {finite, finite && total < limit * 0.5f};
}

// n float16 values as floats: whole vectors, then one at a time.
template <class O>
void widen_halves(const std::uint16_t* src, std::size_t n, float* dst) {
    std::size_t i = 0;
    for (; i + O::width <= n; i += O::width) O::store(dst + i, O::load_half(src + i));
    for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}

}  // namespace
}  // namespace xattn::kernels
