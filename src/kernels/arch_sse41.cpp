// The kernels for SSE4.1: native x86 (CMake builds this file with -msse4.1) and WebAssembly
// SIMD128 (em++ -msimd128 -msse4.1: Emscripten lowers the SSE4.1 intrinsics xsimd emits to f32x4 ops).
// The relaxed-SIMD wasm builds compile this file with clang 16 and -mrelaxed-simd as well: the same
// kernels, with every a·b + c one f32x4.relaxed_madd (simd_relaxed.hpp).
#include "kernels/kernels.hpp"

#if defined(__SSE4_1__)
#include "kernels/arch_ops.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_backward.hpp"
#include "kernels/attention_decode.hpp"
#include "kernels/linear.hpp"

namespace xattn::kernels {
namespace {
using Ops = Sse41Ops;
// 8 accumulators: scores 2 keys × 4 vectors (16 queries), outputs 2 rows × 4 vectors (16 columns),
// projections 2 rows × 4 vectors (16 columns). Key tiles of up to 96. V8 keeps 8 live accumulators
// in registers and reaches the wasm SIMD peak; at 12 it spills and falls to about half.
using Attention = AttentionKernel<Ops, 2, 4, 2, 4, 96, 4>;
// The same tiles in blocks of 16 accumulators (scores 4 keys × 4 vectors, outputs 4 rows × 4 vectors), for
// CPUs with 32 vector registers (Arm, RISC-V), where 8 accumulators leave fused multiply-adds' latency
// uncovered; x86 has 16, and there V8 spills them. best_kernels() picks by the CPU (blocking.cpp). Both evened
// out their key tiles to multiples of 4 keys (TileGrain), so they give the same bits.
using Attention16 = AttentionKernel<Ops, 4, 4, 4, 4, 96, 4>;
// A few query rows (decoding): keys in lanes for the scores, Ev in lanes for the products (2 rows × 4 vectors,
// one row × 8); in blocks of 16: scores of 4 rows × 4 key vectors, products 4 rows × 4 vectors.
using Decode = DecodeKernel<Ops, 2, 4>;
using Decode16 = DecodeKernel<Ops, 4, 4, 16>;
// The projections: 2 rows × 4 vectors; in blocks of 16, 4 × 4.
using Linear = LinearKernel<Ops, 2, 4>;
using Linear16 = LinearKernel<Ops, 4, 4>;
#if defined(__wasm_relaxed_simd__)
#define XATTN_SSE41_SET "wasm-relaxed-simd"
#elif defined(__wasm_simd128__)
#define XATTN_SSE41_SET "wasm-simd128"
#else
#define XATTN_SSE41_SET "sse4.1"
#endif
// A set of these kernels in the blocks of A (attention, forward and backward), P (projections) and D (decoding).
template <class A, class P, class D>
constexpr KernelSet kernel_set(const char* name) {
    using Backward = AttentionBackward<A>;
    return KernelSet{name, &A::workspace, &A::run, &P::workspace, &P::run, &D::workspace,
                     &D::run, &Backward::workspace, &Backward::run};
}
const KernelSet kSet = kernel_set<Attention, Linear, Decode>(XATTN_SSE41_SET);
const KernelSet kSet16 = kernel_set<Attention16, Linear16, Decode16>(XATTN_SSE41_SET "/16");
#undef XATTN_SSE41_SET
}  // namespace
const KernelSet* sse41_kernels() { return &kSet; }
const KernelSet* sse41_kernels_16() { return &kSet16; }
}  // namespace xattn::kernels
#else
namespace xattn::kernels {
const KernelSet* sse41_kernels() { return nullptr; }
const KernelSet* sse41_kernels_16() { return nullptr; }
}  // namespace xattn::kernels
#endif
