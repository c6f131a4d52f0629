// The AVX-512F set's probes: built with kernels/arch_avx512.cpp's flags, on its ops; null without them.
#include "kernels/arch_ops.hpp"  // first: see its note on AVX-512
#include "kernel_probes/ops_probes.hpp"

namespace xattn::kernels {
const KernelProbes* avx512_probes() {
#if defined(__AVX512F__)
    return probes_of_ops<Avx512Ops>();
#else
    return nullptr;
#endif
}
}  // namespace xattn::kernels
