// The probes of one ops type O (probes.hpp): the same loops the kernels run on it. Included by each
// probes_*.cpp, compiled with its kernel file's flags; internal linkage, as every kernel header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernel_probes/probes.hpp"
#include "kernels/exp2.hpp"
#include "kernels/simd_scalar.hpp"
#include "kernels/vector_loops.hpp"

namespace xattn::kernels {
namespace {

// exp2 of n values <= 0, -inf or NaN: whole vectors of O, then the tail one at a time.
template <class O>
void exp2_values(const float* x, std::size_t n, float* out) {
    std::size_t i = 0;
    for (; i + O::width <= n; i += O::width) O::store(out + i, exp2_nonpositive<O>(O::load(x + i)));
    for (; i < n; ++i) out[i] = exp2_nonpositive<ScalarOps>(x[i]);
}

template <class O>
const KernelProbes* probes_of_ops() {
    static const KernelProbes probes{&widen_halves<O>, &exp2_values<O>};
    return &probes;
}

}  // namespace
}  // namespace xattn::kernels
