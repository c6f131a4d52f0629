// The AVX2 set's probes: built with kernels/arch_avx2.cpp's flags, on its ops; null without them.
#include "kernels/arch_ops.hpp"  // first: see its note on AVX-512
#include "kernel_probes/ops_probes.hpp"

namespace xattn::kernels {
const KernelProbes* avx2_probes() {
#if defined(__AVX2__) && defined(__FMA__)
    return probes_of_ops<Avx2Ops>();
#else
    return nullptr;
#endif
}
}  // namespace xattn::kernels
