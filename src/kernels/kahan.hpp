// Kahan-compensated addition on one ops type, shared by the wide (attention.hpp) and decoding
// (attention_decode.hpp) kernels: their softmax denominators and output rows are sums over every key, and
// with compensation a sum over a million keys loses no more than one over a tile. Internal linkage, like
// every kernel header: see src/kernels/README.md.
#pragma once

namespace xattn::kernels {
namespace {

// sum += x with Kahan's compensation c (what rounding took from sum, added back with the next term).
template <class O>
void kahan_add(typename O::V& sum, typename O::V& c, const typename O::V& x) {
    const typename O::V y = x - c;
    const typename O::V t = sum + y;
    c = (t - sum) - y;
    sum = t;
}

// The same where sum may be inf or NaN: the compensation stays 0 there, so inf never turns into NaN
// through inf − inf.
template <class O>
void kahan_add_guarded(typename O::V& sum, typename O::V& c, const typename O::V& x) {
    const typename O::V y = x - c;
    const typename O::V t = sum + y;
    c = O::select(t - t == O::splat(0.0f), (t - sum) - y, O::splat(0.0f));
    sum = t;
}

}  // namespace
}  // namespace xattn::kernels
