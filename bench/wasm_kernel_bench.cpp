// The attention kernels in WebAssembly: GFLOP/s (median and best run, single thread) for the target
// shapes, streaming (no weights) and materialising (weights), beside the arithmetic peak measured just
// before each shape; first one head of L = S = 16384, E = 64 streamed, with the linear memory it took; in the
// SIMD build, what the micro-kernel alone reaches (micro_ceiling.hpp) and each streaming call against the peak
// timed alternately with it; last, the TransformerEncoderLayer's products, forward and backward (layer_products.hpp).
// Build and run: bash bench/wasm-bench.sh [simd|scalar] [quick|big|layer]
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "kernels/kernels.hpp"
#include "layer_products.hpp"
#include "micro_ceiling.hpp"
#include "peak.hpp"

// One head of L = S = 16384, E = 64 streamed. Run first in a fresh module, so the linear memory it
// reports (which only ever grows) is what this call needs: Q, K, V, O are 4 MiB each.
void big_streaming_run() {
    const bench::Case big{1, 16384, 16384, 64};
    bench::Problem p(big, false);
    const bench::Timing t = bench::time_runs([&] { p.run_kernels(); }, 3, 0.0);
    const double mib = __builtin_wasm_memory_size(0) * 65536.0 / (1 << 20);
    std::printf("1x16384x64 streaming: %.1f GFLOP/s median (%.2f s), linear memory %.1f MiB\n",
                bench::flops(big) / t.median * 1e-9, t.median, mib);
}

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    std::printf("kernels: %s\n", xattn::kernels::best_kernels().name);
    if (mode == "layer") {  // the layer's products alone
        bench::print_layer_products(xattn::kernels::best_kernels(), bench::peak_once, 15);
        return 0;
    }
    if (mode != "quick") big_streaming_run();
    if (mode == "big") return 0;
    {  // let V8 tier the kernels up before anything is timed
        bench::Problem warm({4, 256, 256, 64}, false);
        bench::time_runs([&] { warm.run_kernels(); }, 5, 1.0);
    }
    std::printf("GFLOP/s by wall clock median / best run / CPU-time median\n%-14s %26s %26s %6s\n", "BHxLxE (S=L)",
                "streaming", "weights", "peak");
    for (const bench::Case& c : bench::target_cases()) {
        const double peak = bench::peak_gflops();
        std::printf("%3zux%4zux%-5zu", c.BH, c.L, c.E);
        for (bool weights : {false, true}) {
            bench::Problem p(c, weights);
            const bench::Timing t = bench::time_runs([&] { p.run_kernels(); }, mode == "quick" ? 3 : 9);
            std::printf("   %7.1f %7.1f %7.1f", bench::flops(c) / t.median * 1e-9, bench::flops(c) / t.best * 1e-9,
                        bench::flops(c) / t.cpu_median * 1e-9);
        }
        std::printf(" %6.1f\n", peak);
    }
#if defined(__wasm_simd128__)
    {  // what the micro-kernel alone reaches, against the peak measured beside it (micro_ceiling.hpp): rounds of
       // one peak loop then one micro-kernel run, so a busy moment of the machine slows both (a best-of-20 peak
       // beside one run would read the quietest moment against an ordinary one); medians of the rounds.
        bench::MicroCeiling micro;
        using bench::median;
        std::vector<double> g, peak, share;
        for (int round = 0; round < 15; ++round) {
            peak.push_back(bench::peak_once());
            g.push_back(micro.gflops(500));
            share.push_back(g.back() / peak.back());
        }
        std::printf("\nmicro-kernel alone (one key tile's scores, 2x4 blocks, operands in cache): %.1f GFLOP/s, %.0f%% of "
                    "the peak %.1f (medians of 15 rounds, each one peak run then one micro-kernel run)\n", median(g),
                    100.0 * median(share), median(peak));
    }
    // The whole streaming call likewise, against the peak loop timed alternately with it (the table above reads a
    // peak taken before the shape, the best of 20 runs).
    std::printf("\nstreaming against the peak, the two timed alternately (medians of %d rounds; the share is the "
                "median of each round's), GFLOP/s call / peak (share):\n", mode == "quick" ? 5 : 15);
    for (const bench::Case& c : bench::target_cases()) {
        bench::Problem p(c, false);
        const bench::BesidePeak b =
            bench::time_beside_peak([&] { p.run_kernels(); }, bench::flops(c), bench::peak_once, mode == "quick" ? 5 : 15);
        std::printf("  %3zux%4zux%-5zu %6.1f / %5.1f (%3.0f%%)\n", c.BH, c.L, c.E, b.gflops, b.peak_gflops,
                    100.0 * b.share);
    }
#endif
    bench::print_variants(xattn::kernels::best_kernels().name, mode == "quick" ? 3 : 7);
    bench::print_backward(xattn::kernels::best_kernels().name, mode == "quick" ? 3 : 7);
    bench::print_window(xattn::kernels::best_kernels().name, mode == "quick" ? 3 : 7);
    {  // MultiheadAttention's projections: float32 sums (kernels/linear.hpp).
        const bench::Timing t = bench::time_linear(xattn::kernels::best_kernels(), mode == "quick" ? 3 : 7);
        std::printf("\nlinear (512 rows, 512 in, 512 out), float32 sums: %.1f GFLOP/s wall median, %.1f CPU median\n",
                    bench::linear_flops() / t.median * 1e-9, bench::linear_flops() / t.cpu_median * 1e-9);
    }
#if defined(__wasm_simd128__)  // beside the SIMD peak loop, which the scalar build has none of
    bench::print_layer_products(xattn::kernels::best_kernels(), bench::peak_once, mode == "quick" ? 5 : 15);
#endif
    return 0;
}
