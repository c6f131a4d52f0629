// The score product of one key tile and one query group, Sᵀ (Keys, GW) = K tile (Keys, E) · Qᵀ (E, GW), every
// operand in cache and nothing else around it: the shipped micro-kernel (kernels/micro.hpp) and variants of its
// loop (register blocking R keys × NV vectors, the order of loads inside a step of E, how many steps one pass of
// the loop takes). E is known only at run time, as in the kernels. Compiled twice by blocking-probe.sh: by em++
// (plain SIMD128: a·b + c a multiply and an add) and by clang 16 with -mrelaxed-simd (one f32x4.relaxed_madd),
// each object naming its entry by BLOCKS_FLAVOUR, so that one process (probe.mjs) times both beside both of the
// bench's peaks.
#include <cstddef>
#include <vector>

#include "kernels/arch_ops.hpp"
#include "kernels/micro.hpp"

#define BLOCKS_CAT2(a, b) a##b
#define BLOCKS_CAT(a, b) BLOCKS_CAT2(a, b)
#define BLOCKS_FN(name) BLOCKS_CAT(name, BLOCKS_FLAVOUR)

namespace {
using Ops = xattn::kernels::Sse41Ops;
using V = Ops::V;
constexpr std::size_t Keys = 96;  // a multiple of 1, 2, 3 and 4

enum class Order { b_first, a_first };  // micro.hpp's: the NV B vectors, then a row at a time; or R broadcasts first

// Sᵀ (Keys, GW) += K (Keys, E) · Qᵀ (E, GW) in blocks of R keys × NV vectors (GW = NV · 4 queries), Unroll steps of
// E a pass (E a multiple of Unroll here).
template <std::size_t R, std::size_t NV, Order O, std::size_t Unroll>
__attribute__((noinline)) void scores_variant(std::size_t E, const float* k, const float* panel, float* st) {
    constexpr std::size_t GW = NV * Ops::width;
    const auto step = [&](xattn::kernels::Block<Ops, R, NV>& acc, const float* a, const float* b) {
        if constexpr (O == Order::b_first) {
            V bk[NV];
            for (std::size_t v = 0; v < NV; ++v) bk[v] = Ops::load(b + v * Ops::width);
            for (std::size_t r = 0; r < R; ++r) {
                const V ar = Ops::splat(a[r * E]);
                for (std::size_t v = 0; v < NV; ++v) acc.c[r][v] = Ops::fmadd(ar, bk[v], acc.c[r][v]);
            }
        } else {
            V ar[R];
            for (std::size_t r = 0; r < R; ++r) ar[r] = Ops::splat(a[r * E]);
            for (std::size_t v = 0; v < NV; ++v) {
                const V bv = Ops::load(b + v * Ops::width);
                for (std::size_t r = 0; r < R; ++r) acc.c[r][v] = Ops::fmadd(ar[r], bv, acc.c[r][v]);
            }
        }
    };
    for (std::size_t j0 = 0; j0 < Keys; j0 += R) {
        xattn::kernels::Block<Ops, R, NV> acc;  // R × NV accumulators
        acc.fill(Ops::splat(0.0f));
        const float* a = k + j0 * E;
        const float* b = panel;
        for (std::size_t e = 0; e < E; e += Unroll, a += Unroll, b += Unroll * GW)
            for (std::size_t u = 0; u < Unroll; ++u) step(acc, a + u, b + u * GW);
        acc.store(st + j0 * GW, GW);
    }
}

// The shipped loop, micro.hpp's accumulate.
template <std::size_t R, std::size_t NV>
__attribute__((noinline)) void scores_shipped(std::size_t E, const float* k, const float* panel, float* st) {
    constexpr std::size_t GW = NV * Ops::width;
    for (std::size_t j0 = 0; j0 < Keys; j0 += R) {
        xattn::kernels::Block<Ops, R, NV> acc;
        acc.fill(Ops::splat(0.0f));
        xattn::kernels::accumulate(acc, E, k + j0 * E, E, 1, panel, GW);
        acc.store(st + j0 * GW, GW);
    }
}

template <std::size_t R, std::size_t NV, class F>
double run(F scores, std::size_t E, int reps) {
    constexpr std::size_t GW = NV * Ops::width;
    std::vector<float> k(Keys * E, 0.5f), panel(E * GW, 0.25f), st(Keys * GW);  // K (Keys, E), Qᵀ (E, GW), Sᵀ
    for (int r = 0; r < reps; ++r) scores(E, k.data(), panel.data(), st.data());
    return 2.0 * Keys * GW * E * reps;  // FLOPs
}
}  // namespace

// The variants, by index (probe.mjs names them): FLOPs of `reps` tiles over E (a multiple of 4).
extern "C" __attribute__((used, visibility("default"))) double BLOCKS_FN(blocks_run_)(int which, int E, int reps) {
    const std::size_t e = static_cast<std::size_t>(E);
    switch (which) {
        // micro.hpp's loop at each blocking: 8, 10, 12, 12, 12, 9, 16 and 8 accumulators
        case 0: return run<2, 4>(scores_shipped<2, 4>, e, reps);  // the x86 blocking
        case 1: return run<2, 5>(scores_shipped<2, 5>, e, reps);
        case 2: return run<2, 6>(scores_shipped<2, 6>, e, reps);
        case 3: return run<3, 4>(scores_shipped<3, 4>, e, reps);
        case 4: return run<4, 3>(scores_shipped<4, 3>, e, reps);
        case 5: return run<3, 3>(scores_shipped<3, 3>, e, reps);
        case 6: return run<4, 4>(scores_shipped<4, 4>, e, reps);  // the blocking for 32 registers
        case 7: return run<1, 8>(scores_shipped<1, 8>, e, reps);
        // the other order, and steps of E unrolled in the source
        case 8: return run<2, 4>(scores_variant<2, 4, Order::a_first, 1>, e, reps);
        case 9: return run<3, 3>(scores_variant<3, 3, Order::a_first, 1>, e, reps);
        case 10: return run<2, 5>(scores_variant<2, 5, Order::a_first, 1>, e, reps);
        case 11: return run<2, 4>(scores_variant<2, 4, Order::b_first, 2>, e, reps);
        case 12: return run<2, 4>(scores_variant<2, 4, Order::b_first, 4>, e, reps);
        case 13: return run<2, 4>(scores_variant<2, 4, Order::a_first, 4>, e, reps);
        default: return 0;
    }
}
