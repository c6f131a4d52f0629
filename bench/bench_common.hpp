// Shared by the native and the wasm kernel benchmarks: the shapes the targets are stated for, inputs,
// timing (median and best of several runs, single thread) and GFLOP/s with FLOPs = 4·B·H·L·S·E (the two products).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#if defined(__EMSCRIPTEN__)
#include <emscripten.h>
#else
#include <ctime>
#endif

#include "kernels/kernels.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/sdpa_backward.hpp"

namespace bench {

struct Case {
    std::size_t BH, L, S, E;  // (B·H, L, E) queries, S keys, Ev = E
};

// The shared notes on peers (peers.md) measure these shapes (S = L).
inline const std::vector<Case>& target_cases() {
    static const std::vector<Case> cases{{1, 128, 128, 64},   {8, 256, 256, 64},    {12, 197, 197, 64},
                                         {32, 512, 512, 64},  {8, 1024, 1024, 64},  {1, 2048, 2048, 64}};
    return cases;
}

inline double flops(const Case& c) { return 4.0 * c.BH * c.L * c.S * c.E; }

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
    std::vector<float> x(n);
    for (float& v : x) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<float>(static_cast<std::int64_t>(seed >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
    }
    return x;
}

// Seconds of CPU this process has used: unlike the wall clock, it does not count the time another
// process holds the core (the machine is shared: 2 cores, often several jobs).
#if defined(__EMSCRIPTEN__)
EM_JS(double, process_cpu_seconds, (), {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
});
#else
inline double process_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
#endif

struct Timing {
    double median, best;  // wall seconds
    double cpu_median;    // CPU seconds
};

// Times `fn` after one warm-up run: at least `min_runs` runs and ~`min_seconds`. The wall-clock
// median is what a user sees; the best run and the CPU-time median show what the code does when the
// machine is busy with other work.
inline Timing time_runs(const std::function<void()>& fn, int min_runs = 7, double min_seconds = 0.3) {
    using clock = std::chrono::steady_clock;
    fn();
    std::vector<double> times, cpu;
    const auto start = clock::now();
    while (static_cast<int>(times.size()) < min_runs ||
           (std::chrono::duration<double>(clock::now() - start).count() < min_seconds && times.size() < 200)) {
        const double c0 = process_cpu_seconds();
        const auto t0 = clock::now();
        fn();
        times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
        cpu.push_back(process_cpu_seconds() - c0);
    }
    std::sort(times.begin(), times.end());
    std::sort(cpu.begin(), cpu.end());
    return {times[times.size() / 2], times.front(), cpu[cpu.size() / 2]};
}

// The median of a set of samples (the upper one of the middle two when there are evenly many).
inline double median(std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
}

// `fn` (flops a run) and a peak loop (peak_once: one run's GFLOP/s) timed alternately after a warm-up of each: each
// round times one call, then runs the peak loop for at least as long, so that both samples cover as much of the
// host's time. Returns the medians of both and of each round's ratio: the share of the peak as the host was while
// the kernel ran (a shared host's speed moves within a minute, and a peak taken before a shape, best of 20, is a
// different moment and a different statistic).
struct BesidePeak {
    double gflops, peak_gflops, share;
};
inline BesidePeak time_beside_peak(const std::function<void()>& fn, double flops, double (*peak_once)(), int rounds = 15) {
    using clock = std::chrono::steady_clock;
    const auto seconds = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
    fn();
    peak_once();
    std::vector<double> kernel, peak, share;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = clock::now();
        fn();
        const double s = seconds(t0);
        double work = 0.0, spent = 0.0;  // GFLOP and seconds of the peak loop
        t0 = clock::now();
        do {
            const auto t1 = clock::now();
            const double g = peak_once();
            const double dt = seconds(t1);
            work += g * dt, spent += dt;
        } while (seconds(t0) < s);
        kernel.push_back(flops / s * 1e-9);
        peak.push_back(work / spent);
        share.push_back(kernel.back() / peak.back());
    }
    return {median(kernel), median(peak), median(share)};
}

// Options beyond the plain call, to see what masks, causal rules and dropout cost.
struct Variant {
    const char* name = "plain";
    bool causal = false;
    xattn::MaskKind mask = xattn::MaskKind::none;
    bool mask_per_query = true;  // mask (L, S); else (B·H, 1, S), one row for every query (key padding)
    double dropout = 0.0;
};

// One attention problem with its buffers; run_kernels() runs run_sdpa, run_rows() run_sdpa_rows.
struct Problem {
    xattn::SdpaPlan plan;
    std::vector<float> q, k, v, out, weights, mask_values;
    std::vector<std::uint8_t> mask_bools;
    xattn::MaskRef mask;

    Problem(const Case& c, bool need_weights, const Variant& x = {}) {
        xattn::SdpaSettings s;
        s.need_weights = need_weights;
        s.is_causal = x.causal;
        s.dropout_p = x.dropout;
        s.seed = 7;
        const xattn::Shape mask_shape = x.mask_per_query ? xattn::Shape{c.L, c.S} : xattn::Shape{c.BH, 1, c.S};
        const std::size_t mask_size = x.mask_per_query ? c.L * c.S : c.BH * c.S;
        if (x.mask == xattn::MaskKind::boolean) {
            mask_bools.resize(mask_size);
            for (std::size_t i = 0; i < mask_size; ++i) mask_bools[i] = (i * 2654435761u) % 10 < 8;  // 80% allowed
            mask = xattn::MaskRef{xattn::MaskKind::boolean, mask_bools.data(), nullptr, mask_shape};
        } else if (x.mask == xattn::MaskKind::additive) {
            mask_values = random_floats(mask_size, 4);
            mask = xattn::MaskRef{xattn::MaskKind::additive, nullptr, mask_values.data(), mask_shape};
        }
        const xattn::Status st = xattn::plan_sdpa({c.BH, c.L, c.E}, {c.BH, c.S, c.E}, {c.BH, c.S, c.E}, mask.kind,
                                                  mask.shape, s, &plan);
        if (!st.ok()) std::fprintf(stderr, "bench: %s\n", st.message().c_str());
        q = random_floats(c.BH * c.L * c.E, 1);
        k = random_floats(c.BH * c.S * c.E, 2);
        v = random_floats(c.BH * c.S * c.E, 3);
        out.resize(c.BH * c.L * c.E);
        if (need_weights) weights.resize(c.BH * c.L * c.S);
    }
    std::vector<unsigned char> workspace;  // what plan.workspace_bytes asks for (or the row kernel's)

    // The tiled kernels (run_sdpa), in a workspace allocated once, as the wasm bindings run them.
    void run_kernels() {
        workspace.resize(std::max<std::size_t>(workspace.size(), plan.workspace_bytes));
        xattn::run_sdpa(plan, q.data(), k.data(), v.data(), mask, out.data(), weights.empty() ? nullptr : weights.data(),
                        workspace.data());
    }
    // The row-at-a-time baseline (run_sdpa_rows).
    void run_rows() {
        workspace.resize(std::max<std::size_t>(workspace.size(), xattn::sdpa_rows_workspace_bytes(plan)));
        xattn::run_sdpa_rows(plan, q.data(), k.data(), v.data(), mask, out.data(),
                             weights.empty() ? nullptr : weights.data(), workspace.data());
    }
};

// The variants both benchmarks time on one shape.
inline std::vector<Variant> variants() {
    std::vector<Variant> v(7);
    v[1].name = "causal (top-left; FLOPs counted as if dense)";
    v[1].causal = true;
    v[2].name = "bool mask (L, S)";
    v[2].mask = xattn::MaskKind::boolean;
    v[3].name = "float mask (L, S)";
    v[3].mask = xattn::MaskKind::additive;
    v[4].name = "bool key-padding mask (B*H, 1, S)";
    v[4].mask = xattn::MaskKind::boolean;
    v[4].mask_per_query = false;
    v[5].name = "dropout 0.1";
    v[5].dropout = 0.1;
    v[6].name = "float mask (L, S) + dropout 0.1";
    v[6].mask = xattn::MaskKind::additive;
    v[6].dropout = 0.1;
    return v;
}

// One backward problem (the fused kernel, workspace allocated once); FLOPs counted as 12·B·H·L·S·E
// (three products of the forward's size), the convention bench/README.md states.
struct BackwardProblem {
    xattn::SdpaPlan plan;
    std::vector<float> q, k, v, dO, out, dq, dk, dv;
    std::vector<unsigned char> workspace;
    explicit BackwardProblem(const Case& c) {
        const xattn::Shape qs{c.BH, c.L, c.E}, ks{c.BH, c.S, c.E};
        const xattn::Status st = xattn::plan_sdpa_backward(qs, ks, ks, qs, xattn::MaskKind::none, {}, {}, &plan);
        if (!st.ok()) std::fprintf(stderr, "bench: %s\n", st.message().c_str());
        q = random_floats(c.BH * c.L * c.E, 11), dO = random_floats(c.BH * c.L * c.E, 14);
        k = random_floats(c.BH * c.S * c.E, 12), v = random_floats(c.BH * c.S * c.E, 13);
        out.resize(q.size()), dq.resize(q.size()), dk.resize(k.size()), dv.resize(v.size());
        workspace.resize(plan.workspace_bytes);
    }
    void run() {
        xattn::run_sdpa_backward(plan, q.data(), k.data(), v.data(), {}, dO.data(), out.data(), dq.data(), dk.data(),
                                 dv.data(), nullptr, workspace.data());
    }
};

inline double backward_flops(const Case& c) { return 3.0 * flops(c); }

// Two sections both kernel benchmarks print, `set` naming the kernel set that runs (each with `runs` timed calls at
// least). The 8×1024×64 call with each option, streaming and with weights:
inline void print_variants(const char* set, int runs) {
    const Case vc{8, 1024, 1024, 64};
    std::printf("\n8x1024x64 with options (%s, streaming / weights, GFLOP/s wall median/CPU median):\n", set);
    for (const Variant& x : variants()) {
        std::printf("  %-46s", x.name);
        for (bool weights : {false, true}) {
            Problem p(vc, weights, x);
            const Timing t = time_runs([&] { p.run_kernels(); }, runs);
            std::printf(" %6.1f/%-6.1f", flops(vc) / t.median * 1e-9, flops(vc) / t.cpu_median * 1e-9);
        }
        std::printf("\n");
    }
}

// … and the fused backward against the forward (streaming) of the same shape.
inline void print_backward(const char* set, int runs) {
    std::printf("\nbackward (%s), GFLOP/s wall median with FLOPs = 12·B·H·L·S·E, forward 4·B·H·L·S·E:\n", set);
    for (const Case& c : target_cases()) {
        Problem f(c, false);
        BackwardProblem b(c);
        const Timing tf = time_runs([&] { f.run_kernels(); }, runs);
        const Timing tb = time_runs([&] { b.run(); }, runs);
        const double gf = flops(c) / tf.median * 1e-9, gb = backward_flops(c) / tb.median * 1e-9;
        std::printf("  %3zux%4zux%-4zu forward %6.1f  backward %6.1f  backward/forward %.2f\n", c.BH, c.L, c.E, gf, gb,
                    gb / gf);
    }
}

// MultiheadAttention's projections (kernels/linear.hpp): one 512 × 512 by 512 × 512 product with `set`, float32
// sums; its FLOPs are linear_flops().
constexpr std::size_t kLinearN = 512;
inline double linear_flops() { return 2.0 * kLinearN * kLinearN * kLinearN; }
inline Timing time_linear(const xattn::kernels::KernelSet& set, int runs) {
    const std::size_t n = kLinearN;
    const std::vector<float> x = random_floats(n * n, 5), w = random_floats(n * n, 6);  // (n, n) each
    std::vector<float> y(n * n);                                                          // (n, n)
    xattn::kernels::LinearProblem lp;
    lp.rows = lp.in = lp.out = n;
    lp.x = x.data(), lp.x_stride = n, lp.w = w.data(), lp.y = y.data(), lp.y_stride = n;
    return time_runs([&] { xattn::kernels::run_linear(set, lp); }, runs);
}

}  // namespace bench
