// The SSE4.1 set's probes: built with kernels/arch_sse41.cpp's flags, on its ops; null without them.
#include "kernels/arch_ops.hpp"  // first: see its note on AVX-512
#include "kernel_probes/ops_probes.hpp"

namespace xattn::kernels {
const KernelProbes* sse41_probes() {
#if defined(__SSE4_1__)
    return probes_of_ops<Sse41Ops>();
#else
    return nullptr;
#endif
}
}  // namespace xattn::kernels
