// The AVX2 set's probes: built with kernels/arch_avx2.cpp's flags, on its ops.
#include "kernel_probes/probes.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernel_probes/ops_probes.hpp"
#include "kernels/arch_ops.hpp"

namespace xattn::kernels {
const KernelProbes* avx2_probes() { return probes_of_ops<Avx2Ops>(); }
}  // namespace xattn::kernels
#else
namespace xattn::kernels {
const KernelProbes* avx2_probes() { return nullptr; }
}  // namespace xattn::kernels
#endif
