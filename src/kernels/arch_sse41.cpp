// The kernels for SSE4.1: native x86 (CMake builds this file with -msse4.1) and WebAssembly
// SIMD128 (em++ -msimd128 -msse4.1: Emscripten lowers the SSE4.1 intrinsics xsimd emits to f32x4 ops).
// The relaxed-SIMD wasm builds compile this file with clang 16 and -mrelaxed-simd as well: the same
// kernels, with every a·b + c one f32x4.relaxed_madd (simd_relaxed.hpp).
#include "kernels/kernels.hpp"

#if defined(__SSE4_1__)
#include "kernels/simd_xsimd.hpp"
#if defined(__wasm_relaxed_simd__)
#include "kernels/simd_relaxed.hpp"
#endif
#include "kernels/attention.hpp"
#include "kernels/attention_backward.hpp"
#include "kernels/attention_decode.hpp"
#include "kernels/linear.hpp"

namespace xattn::kernels {
namespace {
#if defined(__wasm_relaxed_simd__)
using Ops = RelaxedOps<xsimd::sse4_1>;
#else
using Ops = XsimdOps<xsimd::sse4_1>;
#endif
// 8 accumulators: scores 2 keys × 4 vectors (16 queries), outputs 2 rows × 4 vectors (16 columns),
// projections 2 rows × 4 vectors (16 columns). Key tiles of up to 96. V8 keeps 8 live accumulators
// in registers and reaches the wasm SIMD peak; at 12 it spills and falls to about half.
using Attention = AttentionKernel<Ops, 2, 4, 2, 4, 96>;
// A few query rows (decoding): keys in lanes for the scores, Ev in lanes for the products (2 rows × 4 vectors,
// one row × 8).
using Decode = DecodeKernel<Ops, 2, 4>;
using Backward = AttentionBackward<Attention>;
using Linear = LinearKernel<Ops, 2, 4>;
#if defined(__wasm_relaxed_simd__)
constexpr const char* kName = "wasm-relaxed-simd";
#elif defined(__wasm_simd128__)
constexpr const char* kName = "wasm-simd128";
#else
constexpr const char* kName = "sse4.1";
#endif
const KernelSet kSet{kName, &Attention::workspace, &Attention::run, &Linear::workspace, &Linear::run,
                    &Decode::workspace, &Decode::run, &Attention::widen, &Backward::workspace,
                    &Backward::run, &Attention::exp_values};
}  // namespace
const KernelSet* sse41_kernels() { return &kSet; }
}  // namespace xattn::kernels
#else
namespace xattn::kernels {
const KernelSet* sse41_kernels() { return nullptr; }
}  // namespace xattn::kernels
#endif
