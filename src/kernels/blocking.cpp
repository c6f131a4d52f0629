// Which register blocking of the SSE4.1 / wasm SIMD128 kernels suits the CPU (arch_sse41.cpp holds both): blocks
// of 8 accumulators for x86's 16 vector registers, of 16 for the 32 of Arm and RISC-V. A WebAssembly module can
// neither ask which CPU it runs on nor time the two as it starts (V8 optimises only after a while of calls), but
// it can read one bit the CPU leaves in its numbers: the quiet NaN an invalid operation (∞ − ∞) makes is
// negative on x86 and positive on Arm and RISC-V, a sign WebAssembly leaves to the hardware. Why and what was
// measured: "Two blockings, one result" in src/kernels/README.md.
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/kernels.hpp"

namespace xattn::kernels {

bool many_vector_registers() {
    // volatile: the subtraction must run on this CPU, not be folded by the compiler.
    volatile float inf = std::numeric_limits<float>::infinity();
    const float invalid = inf - inf;
    std::uint32_t bits;
    std::memcpy(&bits, &invalid, sizeof bits);
    return (bits >> 31) == 0;
}

const KernelSet* blocking_for(const KernelSet* set, bool many_registers) {
    if (many_registers && set == sse41_kernels() && sse41_kernels_16()) return sse41_kernels_16();
    return set;
}

}  // namespace xattn::kernels
