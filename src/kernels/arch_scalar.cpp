// The portable kernels: the same tiles one float at a time, for builds without SIMD (wasm without
// -msimd128) and CPUs without SSE4.1. Always compiled.
#include "kernels/kernels.hpp"
#include "kernels/simd_scalar.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_backward.hpp"
#include "kernels/attention_decode.hpp"
#include "kernels/linear.hpp"

namespace xattn::kernels {
namespace {
// 8 scalar accumulators: scores 2 keys × 4 queries, outputs and projections 2 rows × 4 columns.
using Attention = AttentionKernel<ScalarOps, 2, 4, 2, 4, 96>;
using Decode = DecodeKernel<ScalarOps, 2, 4>;  // a few query rows (decoding)
using Backward = AttentionBackward<Attention>;
using Linear = LinearKernel<ScalarOps, 2, 4>;
const KernelSet kSet{"scalar", &Attention::workspace, &Attention::run, &Linear::workspace, &Linear::run,
                    &Decode::workspace, &Decode::run, &Backward::workspace,
                    &Backward::run};
}  // namespace
const KernelSet& scalar_kernels() { return kSet; }
}  // namespace xattn::kernels
