// Which register blocking of the kernels suits the vector registers the code runs with. The SSE4.1 / wasm
// SIMD128 set comes in blocks of 8 accumulators and of 16 (arch_sse41.cpp). x86 has 16 vector registers for
// 128-bit code (V8 does not use AVX-512's 32 for WebAssembly), and there V8 spills blocks of 16: on a Zen 5
// core the wasm SIMD build ran at 0.78-0.81x its speed with them (the six bench shapes, interleaved in one
// process). Arm and RISC-V have 32, where V8's arm64 code keeps all 16 in registers (read from its code), and
// on cores with four fused multiply-add pipes of four cycles' latency (Apple's, Arm's Neoverse V) 8 independent
// accumulators keep at most half of them busy. A WebAssembly module cannot ask which CPU it runs on, nor time
// the two blockings as it starts: V8 runs new code from its baseline compiler first and optimises a function
// only after it has run a while (about 250 ms of calls here), and the baseline code's speeds rank the blockings
// the other way round. But it can read one bit the CPU leaves in its numbers: the quiet NaN an invalid operation
// (∞ − ∞) makes is negative on x86 and positive on Arm and RISC-V. WebAssembly leaves that sign to the hardware,
// and V8 passes it through.
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
