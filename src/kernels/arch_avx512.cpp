// The kernels for x86-64 with AVX-512F (16 float lanes, 32 vector registers). CMake builds this file with
// -mavx512f -mavx2 -mfma; dispatch.cpp calls it only on a CPU (and an OS) that runs AVX-512F.
#include "kernels/kernels.hpp"

#if defined(__AVX512F__)
#include "kernels/arch_ops.hpp"  // first: see its note on AVX-512
#include "kernels/attention.hpp"
#include "kernels/attention_backward.hpp"
#include "kernels/attention_decode.hpp"
#include "kernels/linear.hpp"

namespace xattn::kernels {
namespace {
using Ops = Avx512Ops;
// Scores 8 keys × 2 vectors (32 queries), outputs 4 rows × 4 vectors (64 columns): 16 accumulators of the 32
// zmm registers. Key tiles of up to 96. Timed against 12 × 2 / 6 × 4, 6 × 2, 12 × 1 (16-query groups), 4 × 2,
// P·V 2 × 4 and 6 × 4, and tiles of 64 and 128: none was faster beyond the noise, and P·V 2 × 4 was slower.
using Attention = AttentionKernel<Ops, 8, 2, 4, 4, 96>;
using Decode = DecodeKernel<Ops, 4, 2>;  // a few query rows (decoding): keys in lanes, then Ev
using Backward = AttentionBackward<Attention>;
using Linear = LinearKernel<Ops, 8, 2>;  // 8 rows × 32 columns: faster than 4 × 3 and 4 × 4 at 512³
const KernelSet kSet{"avx512f", &Attention::workspace, &Attention::run, &Linear::workspace, &Linear::run,
                    &Decode::workspace, &Decode::run, &Backward::workspace,
                    &Backward::run};
}  // namespace
const KernelSet* avx512_kernels() { return &kSet; }
}  // namespace xattn::kernels
#else
namespace xattn::kernels {
const KernelSet* avx512_kernels() { return nullptr; }
}  // namespace xattn::kernels
#endif
