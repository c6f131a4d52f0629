// The SSE4.1 set's probes: built with kernels/arch_sse41.cpp's flags, on its ops.
#include "kernel_probes/probes.hpp"

#if defined(__SSE4_1__)
#include "kernel_probes/ops_probes.hpp"
#include "kernels/arch_ops.hpp"

namespace xattn::kernels {
const KernelProbes* sse41_probes() { return probes_of_ops<Sse41Ops>(); }
}  // namespace xattn::kernels
#else
namespace xattn::kernels {
const KernelProbes* sse41_probes() { return nullptr; }
}  // namespace xattn::kernels
#endif
