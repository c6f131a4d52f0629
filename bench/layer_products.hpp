// The TransformerEncoderLayer's products (src/layer_ops.hpp, on the kernels' linear product), forward and backward,
// at the sizes of nanoGPT's cheap configuration (batch 12 × context 64 = 768 rows, E = 128, F = 4E) and larger:
//   forward   Y (R, out) = X (R, in) · Wᵀ + b
//   backward  dX (R, in) = dY (R, out) · W        dW (out, in) = dYᵀ (out, R) · X
// for the attention's projections (E -> E; MultiheadAttention runs q, k, v and out as four) and the feed-forward's
// linear1 (E -> F) and linear2 (F -> E). Each product is timed against the peak loop (cpu_beside_peak), then one
// layer's whole set of products (a training step's: forward and both backward products of all six), then one
// whole TransformerEncoderLayer backward call.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "bench_common.hpp"
#include "kernels/kernels.hpp"
#include "layer_ops.hpp"
#include "xattn/transformer.hpp"

namespace bench {

struct LayerSize {
    const char* name;
    std::size_t rows, E, F;
};

inline const std::vector<LayerSize>& layer_sizes() {
    static const std::vector<LayerSize> sizes{{"nanoGPT cheap (12x64 rows, E 128, F 512)", 768, 128, 512},
                                              {"12x128 rows, E 256, F 1024", 1536, 256, 1024},
                                              {"12x256 rows, E 384, F 1536", 3072, 384, 1536}};
    return sizes;
}

// One linear's operands and the three products on them.
struct LinearOperands {
    std::size_t rows, in, out;
    std::vector<float> x, w, b, y, dy, dx, dw;
    LinearOperands(std::size_t r, std::size_t i, std::size_t o)
        : rows(r), in(i), out(o), x(random_floats(r * i, 21)), w(random_floats(o * i, 22)), b(random_floats(o, 23)),
          y(r * o), dy(random_floats(r * o, 24)), dx(r * i), dw(o * i) {}
    double flops() const { return 2.0 * rows * in * out; }
    void forward(const xattn::detail::Products& p) { p.forward(rows, in, out, x.data(), w.data(), b.data(), y.data()); }
    void input_grad(const xattn::detail::Products& p) { p.input_grad(rows, in, out, dy.data(), w.data(), dx.data()); }
    void weight_grad(const xattn::detail::Products& p) { p.weight_grad(rows, in, out, dy.data(), x.data(), dw.data()); }
};

// `fn` (flops a call) against the peak loop by CPU time: each round runs the call until it has used 20 ms of this
// process's CPU, then the peak loop likewise, and compares the two rates. On a host shared with other jobs (two
// cores, often many more runnable processes) the wall clock mostly measures who else ran, so a call's share of the
// peak by the wall clock says little there; by CPU time it holds still from round to round. Medians of the rounds.
inline BesidePeak cpu_beside_peak(const std::function<void()>& fn, double flops, double (*peak_once)(), int rounds) {
    using clock = std::chrono::steady_clock;
    fn();
    peak_once();
    std::vector<double> call, peak, share;
    for (int r = 0; r < rounds; ++r) {
        double c0 = process_cpu_seconds(), used = 0.0;
        int runs = 0;
        do {
            fn();
            ++runs;
        } while ((used = process_cpu_seconds() - c0) < 0.02);
        call.push_back(runs * flops / used * 1e-9);
        double work = 0.0;  // GFLOP the peak loop did: its rate times its own time
        c0 = process_cpu_seconds();
        do {
            const auto t0 = clock::now();
            const double g = peak_once();
            work += g * std::chrono::duration<double>(clock::now() - t0).count();
        } while ((used = process_cpu_seconds() - c0) < 0.02);
        peak.push_back(work / used);
        share.push_back(call.back() / peak.back());
    }
    return {median(call), median(peak), median(share)};
}

// One TransformerEncoderLayer backward call (its forward inside) at nanoGPT's block: pre-norm, GELU, causal,
// batch_first (12, 64, 128), 4 heads. Its FLOPs are counted as a training step's, 3 × the forward's products and
// attention (4·N·L²·E, the causal half counted dense), not what the call recomputes.
struct LayerCall {
    static constexpr std::size_t N = 12, L = 64, E = 128, H = 4, F = 512;
    xattn::TransformerEncoderLayer layer;
    xattn::EncoderLayerPlan plan;
    std::vector<float> src = random_floats(N * L * E, 31), dy = random_floats(N * L * E, 32), out, dsrc, grads;
    std::vector<unsigned char> workspace;
    static xattn::EncoderLayerConfig config() {
        xattn::EncoderLayerConfig c;
        c.d_model = E, c.nhead = H, c.dim_feedforward = F, c.dropout = 0.0;
        c.activation = xattn::Activation::gelu, c.norm_first = true, c.batch_first = true;
        return c;
    }
    LayerCall() : layer(config()), out(N * L * E), dsrc(N * L * E), grads(layer.parameter_floats()) {
        xattn::EncoderLayerSettings s;
        s.is_causal = true, s.training = true;
        const xattn::Shape shape{N, L, E};
        const xattn::Status st =
            layer.plan_backward(shape, shape, xattn::MaskKind::none, {}, xattn::MaskKind::none, {}, s, &plan);
        if (!st.ok()) std::fprintf(stderr, "bench: %s\n", st.message().c_str());
        workspace.resize(plan.workspace_bytes);
    }
    static double flops() {
        const double R = N * L;
        return 3.0 * (2.0 * R * (4.0 * E * E + 2.0 * E * F) + 4.0 * N * L * L * E);
    }
    void run() {
        layer.run_backward(plan, src.data(), {}, dy.data(), out.data(), dsrc.data(), grads.data(), workspace.data());
    }
};

inline void print_layer_products(const xattn::kernels::KernelSet& set, double (*peak_once)(), int rounds) {
    std::printf("\nTransformerEncoderLayer products (%s, one thread) against the peak loop by CPU time (medians of %d "
                "rounds), GFLOP/s product / peak (share):\n", set.name, rounds);
    for (const LayerSize& s : layer_sizes()) {
        std::printf("  %s\n", s.name);
        LinearOperands proj(s.rows, s.E, s.E), linear1(s.rows, s.E, s.F), linear2(s.rows, s.F, s.E);
        std::uint64_t bytes = 0;
        for (const LinearOperands* l : {&proj, &linear1, &linear2})
            bytes = std::max(bytes, xattn::detail::Products::workspace_bytes(set, 1, l->rows, l->in, l->out, true));
        std::vector<unsigned char> workspace = xattn::kernels::allocate_workspace(bytes);
        const xattn::detail::Products p{&set, 1, workspace.data()};
        struct Named {
            const char* name;
            LinearOperands* l;
        };
        for (const Named& n : {Named{"projection E->E", &proj}, Named{"linear1 E->F  ", &linear1},
                               Named{"linear2 F->E  ", &linear2}}) {
            LinearOperands& l = *n.l;
            const BesidePeak f = cpu_beside_peak([&] { l.forward(p); }, l.flops(), peak_once, rounds);
            const BesidePeak dx = cpu_beside_peak([&] { l.input_grad(p); }, l.flops(), peak_once, rounds);
            const BesidePeak dw = cpu_beside_peak([&] { l.weight_grad(p); }, l.flops(), peak_once, rounds);
            std::printf("    %s  Y=XWt+b %5.1f/%5.1f (%3.0f%%)  dX=dY.W %5.1f/%5.1f (%3.0f%%)  dW=dYt.X %5.1f/%5.1f (%3.0f%%)\n",
                        n.name, f.gflops, f.peak_gflops, 100 * f.share, dx.gflops, dx.peak_gflops, 100 * dx.share,
                        dw.gflops, dw.peak_gflops, 100 * dw.share);
        }
        // One layer's training step: four projections, linear1 and linear2, each forward, dX and dW.
        const double step_flops = 3.0 * (4.0 * proj.flops() + linear1.flops() + linear2.flops());
        const BesidePeak step = cpu_beside_peak(
            [&] {
                for (LinearOperands* l : {&proj, &proj, &proj, &proj, &linear1, &linear2}) {
                    l->forward(p);
                    l->input_grad(p);
                    l->weight_grad(p);
                }
            },
            step_flops, peak_once, rounds);
        std::printf("    a layer's step (6 products x 3)  %5.1f/%5.1f (%3.0f%%)\n", step.gflops, step.peak_gflops,
                    100 * step.share);
    }
    LayerCall call;
    const BesidePeak whole = cpu_beside_peak([&] { call.run(); }, LayerCall::flops(), peak_once, rounds);
    std::printf("  the whole layer's backward call at nanoGPT's block (12x64x128, 4 heads, F 512, pre-norm, GELU, "
                "causal; the forward inside it):\n    %.2f ms of CPU, %5.1f/%5.1f GFLOP/s (%3.0f%%) counting a training "
                "step's FLOPs\n", LayerCall::flops() / (whole.gflops * 1e9) * 1e3, whole.gflops, whole.peak_gflops,
                100 * whole.share);
}

}  // namespace bench
