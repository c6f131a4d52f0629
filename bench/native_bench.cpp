// The attention kernels natively: GFLOP/s (median and best run; one thread, then 1 against 2 threads) for the target shapes,
// for every kernel set this CPU runs (sse4.1 is the code the wasm SIMD build runs), streaming (no
// weights) and materialising (weights), the AVX2 FMA peak (and the AVX-512 one, where the CPU has it)
// measured before each shape, and the row kernel for comparison; then the AVX2 and AVX-512F sets against their
// peaks timed alternately with them (the share the targets ask for).
//   cmake --build build/native --target xattn_native_bench && build/native/xattn_native_bench [quick | window]
#include <cstdio>
#include <string>

#include "bench_common.hpp"
#include "kernels/kernels.hpp"
#include "xattn/threads.hpp"
#include "peak.hpp"

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "quick";
    if (argc > 1 && std::string(argv[1]) == "window") {  // the sliding-window section alone
        bench::print_window(xattn::kernels::best_kernels().name, 5);
        return 0;
    }
    const auto sets = xattn::kernels::available_kernels();
    std::printf("GFLOP/s: wall-clock median/best run/CPU-time median; str = streaming (no weights), wts = weights\n%-13s", "BHxLxE (S=L)");
    for (const auto* set : sets) std::printf(" %13s str  %13s wts ", set->name, set->name);
    std::printf(" %9s %6s %7s\n", "rows str", "peak", "peak512");
    for (const bench::Case& c : bench::target_cases()) {
        const double peak = bench::peak_gflops(), peak512 = bench::peak512_gflops();
        std::printf("%3zux%4zux%-5zu", c.BH, c.L, c.E);
        for (const auto* set : sets) {
            xattn::kernels::use_kernels(set);
            for (bool weights : {false, true}) {
                bench::Problem p(c, weights);
                const bench::Timing t = bench::time_runs([&] { p.run_kernels(); }, quick ? 3 : 9);
                std::printf(" %5.1f/%5.1f/%5.1f", bench::flops(c) / t.median * 1e-9, bench::flops(c) / t.best * 1e-9,
                            bench::flops(c) / t.cpu_median * 1e-9);
            }
        }
        xattn::kernels::use_kernels(nullptr);
        bench::Problem p(c, false);
        const bench::Timing t = bench::time_runs([&] { p.run_rows(); }, 3, 0.0);
        std::printf(" %9.1f %6.1f %7.1f\n", bench::flops(c) / t.median * 1e-9, peak, peak512);
    }
    // The targets' figure: the AVX2 set against the AVX2 FMA peak (and the AVX-512F set against its own), streaming,
    // the two timed alternately.
    std::printf("\none thread against the FMA peak, kernel and peak loop timed alternately (medians of %d rounds), "
                "streaming, GFLOP/s kernel / peak (share: the median of each round's):\n", quick ? 5 : 15);
    for (const bench::Case& c : bench::target_cases()) {
        std::printf("  %3zux%4zux%-5zu", c.BH, c.L, c.E);
        for (const auto* set : sets) {
            const std::string name = set->name;
            double (*peak)() = name == "avx2+fma" ? bench::peak_once : nullptr;
#if defined(XATTN_BENCH_HAS_PEAK512)
            if (name == "avx512f") peak = bench::peak512_once;
#endif
            if (!peak) continue;
            xattn::kernels::use_kernels(set);
            bench::Problem p(c, false);
            const bench::BesidePeak b = bench::time_beside_peak([&] { p.run_kernels(); }, bench::flops(c), peak, quick ? 5 : 15);
            std::printf("  %s %6.1f / %6.1f (%3.0f%%)", set->name, b.gflops, b.peak_gflops, 100.0 * b.share);
        }
        xattn::kernels::use_kernels(nullptr);
        std::printf("\n");
    }
    bench::print_variants(xattn::kernels::best_kernels().name, quick ? 3 : 7);
    bench::print_backward(xattn::kernels::best_kernels().name, quick ? 3 : 7);
    bench::print_window(xattn::kernels::best_kernels().name, quick ? 3 : 7);
    // Threads (xattn/threads.hpp): the same calls planned at 1 and at 2 threads; CPU time counts both threads.
    std::printf("\nthreads (%s), GFLOP/s wall median at t=1 and t=2, and t=2 / t=1:\n", xattn::kernels::best_kernels().name);
    for (const bench::Case& c : bench::target_cases()) {
        double fwd[2], bwd[2];
        for (unsigned t : {1u, 2u}) {
            xattn::set_num_threads(t);
            bench::Problem f(c, false);
            bench::BackwardProblem b(c);
            fwd[t - 1] = bench::flops(c) / bench::time_runs([&] { f.run_kernels(); }, quick ? 3 : 7).median * 1e-9;
            bwd[t - 1] = bench::backward_flops(c) / bench::time_runs([&] { b.run(); }, quick ? 3 : 7).median * 1e-9;
        }
        xattn::set_num_threads(1);
        std::printf("  %3zux%4zux%-4zu forward %6.1f -> %6.1f (%.2fx)  backward %6.1f -> %6.1f (%.2fx)\n", c.BH, c.L, c.E,
                    fwd[0], fwd[1], fwd[1] / fwd[0], bwd[0], bwd[1], bwd[1] / bwd[0]);
    }
    // MultiheadAttention's projections: float32 sums (kernels/linear.hpp).
    std::printf("\nlinear (512 rows, 512 in, 512 out), float32 sums, GFLOP/s wall median/CPU median:");
    for (const auto* set : sets) {
        const bench::Timing t = bench::time_linear(*set, quick ? 3 : 7);
        std::printf("  %s %.1f/%.1f", set->name, bench::linear_flops() / t.median * 1e-9,
                    bench::linear_flops() / t.cpu_median * 1e-9);
    }
    std::printf("\n");
    if (!quick) {
        const bench::Case big{1, 16384, 16384, 64};
        bench::Problem p(big, false);
        const bench::Timing t = bench::time_runs([&] { p.run_kernels(); }, 3, 0.0);
        std::printf("1x16384x64 streaming (%s): %.1f GFLOP/s median\n", xattn::kernels::best_kernels().name,
                    bench::flops(big) / t.median * 1e-9);
    }
    return 0;
}
