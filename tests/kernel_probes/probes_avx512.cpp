// The AVX-512F set's probes: built with kernels/arch_avx512.cpp's flags, on its ops.
#include "kernel_probes/probes.hpp"

#if defined(__AVX512F__)
// As in kernels/arch_avx512.cpp: GCC 12's AVX-512 intrinsics trip its uninitialized-use warnings (bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernel_probes/ops_probes.hpp"
#include "kernels/arch_ops.hpp"

namespace xattn::kernels {
const KernelProbes* avx512_probes() { return probes_of_ops<Avx512Ops>(); }
}  // namespace xattn::kernels
#else
namespace xattn::kernels {
const KernelProbes* avx512_probes() { return nullptr; }
}  // namespace xattn::kernels
#endif
