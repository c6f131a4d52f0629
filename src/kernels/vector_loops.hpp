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

// One pass over x[0, n): whether it holds no inf or NaN (x·0 is 0 for every finite x), and whether every
// |x[i]| is below `limit` as well.
struct Scan {
    bool finite;
    bool below;
};
template <class O>
Scan scan_values(const float* x, std::size_t n, float limit) {
    typename O::V nan_or_inf = O::splat(0.0f), largest = O::splat(0.0f);
    std::size_t i = 0;
    for (; i + O::width <= n; i += O::width) {
        const typename O::V v = O::load(x + i);
        nan_or_inf = O::fmadd(v, O::splat(0.0f), nan_or_inf);
        largest = O::max(largest, O::max(v, O::splat(0.0f) - v));
    }
    alignas(64) float lanes[O::width];
    O::store(lanes, largest);
    float tail = O::hsum(nan_or_inf), top = 0.0f;
    for (const float l : lanes) top = l > top ? l : top;
    for (; i < n; ++i) {
        tail += x[i] * 0.0f;
        const float a = x[i] < 0.0f ? -x[i] : x[i];
        top = a > top ? a : top;
    }
    const bool finite = tail == 0.0f;
    return {finite, finite && top < limit};
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
