// The ceiling the wasm SIMD kernels' arithmetic can reach on this CPU: the score product of one key tile and one
// query group, run as attention.hpp runs it (the shipped 2 × 4 micro-kernel of micro.hpp, a block of 2 keys ×
// 16 queries over E = 64, its 8 accumulators stored after each block), with every operand already in cache and
// nothing else around it (no softmax, no P·V, no memory traffic). The kernels' end-to-end "% of peak" is read
// against this: what the micro-kernel loses to the peak is the instruction mix on this core, what the kernels
// lose beyond it is theirs. The same block with relaxed_madd (one instruction per product instead of two) can be
// set against the relaxed peak likewise.
#pragma once

#if defined(__wasm_simd128__)
#include <cstddef>
#include <vector>

#include "bench_common.hpp"
#include "kernels/micro.hpp"
#include "kernels/simd_xsimd.hpp"

namespace bench {

struct MicroCeiling {
    static constexpr std::size_t E = 64, GW = 16, Keys = 96, KeyRows = 2;
    using Ops = xattn::kernels::XsimdOps<xsimd::sse4_1>;
    std::vector<float> k = random_floats(Keys * E, 11);   // K tile (Keys, E)
    std::vector<float> panel = random_floats(E * GW, 12); // Qᵀ panel (E, GW)
    std::vector<float> st = std::vector<float>(Keys * GW); // Sᵀ tile (Keys, GW)

    // Sᵀ (Keys, GW) = K tile (Keys, E) · Qᵀ (E, GW), in 2 × 4 blocks.
    __attribute__((noinline)) void scores_once() {
        for (std::size_t j0 = 0; j0 < Keys; j0 += KeyRows) {
            xattn::kernels::Block<Ops, KeyRows, GW / Ops::width> acc;
            acc.fill(Ops::splat(0.0f));
            xattn::kernels::accumulate(acc, E, k.data() + j0 * E, E, 1, panel.data(), GW);
            acc.store(st.data() + j0 * GW, GW);
        }
    }

    // GFLOP/s (wall median) of `reps` tiles per run.
    double gflops(int reps = 2000) {
        const Timing t = time_runs([&] { for (int r = 0; r < reps; ++r) scores_once(); }, 9);
        return 2.0 * Keys * GW * E * reps / t.median * 1e-9;
    }
};

}  // namespace bench
#endif
