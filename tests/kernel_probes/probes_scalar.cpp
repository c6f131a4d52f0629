// The scalar set's probes, and which probes belong to which set. Plain flags, as kernels/dispatch.cpp.
#include "kernel_probes/ops_probes.hpp"

namespace xattn::kernels {

const KernelProbes& scalar_probes() { return *probes_of_ops<ScalarOps>(); }

const KernelProbes& probes_of(const KernelSet& set) {
    if (&set == avx512_kernels()) return *avx512_probes();
    if (&set == avx2_kernels()) return *avx2_probes();
    if (&set == sse41_kernels() || &set == sse41_kernels_16()) return *sse41_probes();
    return scalar_probes();
}

}  // namespace xattn::kernels
