// The tests' window on each kernel set's own ops, to check them against the scalar rules: the float16 widening
// (n values), and the softmax's exp2 (kernels/exp2.hpp) on n values <= 0, -inf or NaN, in whole vectors where
// they fit. Built into the testing library only (CMakeLists.txt): the library users get has no probes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"

namespace xattn::kernels {

struct KernelProbes {
    void (*widen_half)(const std::uint16_t* src, std::size_t n, float* dst);
    void (*exp2_nonpositive)(const float* x, std::size_t n, float* out);
};

// The probes of `set`, one of available_kernels() (both blockings of the SSE4.1 set share their ops).
const KernelProbes& probes_of(const KernelSet& set);

// Each instruction set's, from a file built with that set's flags; null where the build has no such kernels.
const KernelProbes* avx512_probes();
const KernelProbes* avx2_probes();
const KernelProbes* sse41_probes();
const KernelProbes& scalar_probes();

}  // namespace xattn::kernels
