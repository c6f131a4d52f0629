// The kernels for x86-64 with AVX2 and FMA. CMake builds this file with -mavx2 -mfma; dispatch.cpp
// calls it only on a CPU that has both.
#include "kernels/kernels.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/arch_ops.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_backward.hpp"
#include "kernels/attention_decode.hpp"
#include "kernels/linear.hpp"

namespace xattn::kernels {
namespace {
using Ops = Avx2Ops;
// 12 accumulators of the 16 ymm registers: scores 6 keys × 2 vectors (16 queries), outputs 6 rows × 2 vectors
// (16 columns), projections 4 rows × 3 vectors (24 columns). Key tiles of up to 96.
// (8 accumulators were slower: 8 chains do not cover 2 FMA units × 4 cycles of latency. Outputs 6 × 2 were
// faster than the 4 × 3 they replaced, timed interleaved: 16 columns divide Ev = 64 and 128, where 24 left a
// 2-vector tail in every row block.)
using Attention = AttentionKernel<Ops, 6, 2, 6, 2, 96>;
using Decode = DecodeKernel<Ops, 4, 3>;  // a few query rows (decoding): keys in lanes, then Ev
using Backward = AttentionBackward<Attention>;
using Linear = LinearKernel<Ops, 4, 3>;
const KernelSet kSet{"avx2+fma", &Attention::workspace, &Attention::run, &Linear::workspace, &Linear::run,
                    &Decode::workspace, &Decode::run, &Backward::workspace,
                    &Backward::run};
}  // namespace
const KernelSet* avx2_kernels() { return &kSet; }
}  // namespace xattn::kernels
#else
namespace xattn::kernels {
const KernelSet* avx2_kernels() { return nullptr; }
}  // namespace xattn::kernels
#endif
