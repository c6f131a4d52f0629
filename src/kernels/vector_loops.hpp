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

// One pass over x[0, n), 3 vector ops an element (a multiply and a multiply-add): the sum of squares of
// x·2^-64 is inf or NaN when x holds inf or NaN (or values near float's limit: then `finite` is false
// conservatively, and the caller takes its careful path), and it bounds max |x| for `below`.
struct Scan {
    bool finite;
    bool below;  // every |x[i]| < limit (implies finite)
};
template <class O>
Scan scan_values(const float* x, std::size_t n, float limit) {
    const typename O::V down = O::splat(0x1p-64f);
    typename O::V squares = O::splat(0.0f);
    std::size_t i = 0;
    for (; i + O::width <= n; i += O::width) {
        const typename O::V v = O::load(x + i) * down;
        squares = O::fmadd(v, v, squares);
    }
    float sum = O::hsum(squares);
    for (; i < n; ++i) sum += (x[i] * 0x1p-64f) * (x[i] * 0x1p-64f);
    const bool finite = sum - sum == 0.0f;
    const float scaled_limit = limit * 0x1p-64f;
    return {finite, finite && sum < scaled_limit * scaled_limit};
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
