// Y (rows, out) = X (rows, in) · Wᵀ (in, out) + bias on one ops type: MultiheadAttention's projections
// and every product of its backward, and the TransformerEncoderLayer's feed-forward products, forward and
// backward (X read down its columns, W stored (in, out): kernels.hpp).
//
// The sums are float32, as PyTorch's are. (They were float64 once, after float32 sums missed the golden
// tolerance on the E = 64 MultiheadAttention fixture; that fixture's parameters saturated the softmax so
// much that PyTorch's own float32 forward missed it too. With parameters at PyTorch's init scale, float32
// sums pass with room to spare, at twice the speed of float64 lanes.)
//
// Blocked like any GEMM, and the micro-kernel (micro.hpp: a = X rows, read in place, or a packed slice of X's
// columns; B = packed Wᵀ) reads B contiguously:
//   Wᵀ panel (kDepth, Vecs·W)    a slice of `in` × one panel of columns, rows contiguous (rows of a whole
//                                (in, out) matrix are 4·out bytes apart: 2 KiB at out = 512, so every row
//                                of a panel would fall in the same L1 set); past `out`: 0. Packed once per call
//                                when Wᵀ is at most 4 MiB, else per task (scratch O(blocks) whatever E is)
//   X slice  (kDepth, kRows)     X read down its columns, copied per task and slice
//   C        (kRows, outp)       the sums across slices, outp = out rounded up to whole vectors
// Packing moves numbers without summing them: every sum runs in the same order however it is packed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/micro.hpp"
#include "kernels/parallel.hpp"

namespace xattn::kernels {
namespace {

// O: float ops (ScalarOps, XsimdOps<Arch>). Rows × Vecs: the register block.
template <class O, std::size_t Rows, std::size_t Vecs>
struct LinearKernel {
    static constexpr std::size_t W = O::width;
    static constexpr std::size_t kRows = 64;     // rows of X per task, sharing each packed Wᵀ panel
    static constexpr std::size_t kDepth = 256;   // slice of `in` per packed block
    static constexpr std::size_t kPanelsPerTask = 4;  // Wᵀ panels a packing task packs
    // Wᵀ is packed once per call, for every task to read, when its panels take at most this; beyond it each
    // task packs its own (scratch O(blocks) whatever `in` and `out` are). Per task, packing costs one read and
    // write of W for kRows rows of products: up to a third of the time of the products at the layer sizes.
    static constexpr std::uint64_t kSharedPanelBytes = std::uint64_t{4} << 20;

    static std::size_t padded(std::size_t out) { return (out + W - 1) / W * W; }
    static std::size_t depth(const LinearProblem& p) { return p.in < kDepth ? p.in : kDepth; }
    static bool shared_panels(const LinearProblem& p) {
        return std::uint64_t{p.in} * padded(p.out) * sizeof(float) <= kSharedPanelBytes;
    }
    // X read down its columns (a transposed operand) is copied per block and slice into (kc, kRows), so that the
    // micro-kernel reads it in order rather than one cache line per k.
    static bool packs_x(const LinearProblem& p) { return p.x_k_stride != 1; }
    static std::uint64_t panel_bytes(const LinearProblem& p) {
        return shared_panels(p) ? worker_stride(std::uint64_t{p.in} * padded(p.out) * sizeof(float)) : 0;
    }
    // One task per block of kRows rows, each with its own scratch, so a row's sums come out of the same code
    // whichever worker runs it: C, and the Wᵀ panel and X slice it packs.
    static std::uint64_t per_worker(const LinearProblem& p) {  // 64-bit: out may be a huge S (backward)
        const std::uint64_t kc = depth(p);
        return worker_stride((std::uint64_t{kRows} * padded(p.out) + (shared_panels(p) ? 0 : kc * Vecs * W) +
                              (packs_x(p) ? kc * kRows : 0)) *
                             sizeof(float));
    }
    static double work(const LinearProblem& p) {  // FLOPs
        return 2.0 * static_cast<double>(p.rows) * static_cast<double>(p.in) * static_cast<double>(p.out);
    }
    static unsigned workers(const LinearProblem& p) {
        return useful_workers(p.threads, (p.rows + kRows - 1) / kRows, work(p));
    }
    static std::uint64_t workspace(const LinearProblem& p) { return panel_bytes(p) + workers(p) * per_worker(p); }

    // Rows k0 .. k0 + kn of Wᵀ, columns col0 .. col0 + pw, into (kn, pw); columns past `out` are 0.
    static void pack_panel(const LinearProblem& p, std::size_t k0, std::size_t kn, std::size_t col0, std::size_t pw,
                           float* dst) {
        const std::size_t valid = p.out - col0 < pw ? p.out - col0 : pw;
        if (p.w_transposed) {  // W (in, out): each panel row is part of a row of W
            for (std::size_t k = 0; k < kn; ++k) {
                const float* src = p.w + (k0 + k) * p.out + col0;
                for (std::size_t o = 0; o < valid; ++o) dst[k * pw + o] = src[o];
                for (std::size_t o = valid; o < pw; ++o) dst[k * pw + o] = 0.0f;
            }
            return;
        }
        for (std::size_t o = 0; o < pw; ++o) {  // W (out, in): each panel column is part of a row of W
            const float* src = p.w + (col0 + o) * p.in + k0;
            if (o < valid)
                for (std::size_t k = 0; k < kn; ++k) dst[k * pw + o] = src[k];
            else
                for (std::size_t k = 0; k < kn; ++k) dst[k * pw + o] = 0.0f;
        }
    }

    static void run(const LinearProblem& p, void* workspace) {
        const std::size_t outp = padded(p.out), nvec = outp / W, kc = depth(p);
        const bool shared = shared_panels(p), pack_x = packs_x(p);
        // Shared panels: slice k0 of Wᵀ at panels + k0·outp, its panel of columns c0·W .. at kn·c0·W within it.
        float* panels = static_cast<float*>(workspace);
        unsigned char* scratch = static_cast<unsigned char*>(workspace) + panel_bytes(p);
        if (shared && p.in > 0) {  // (in = 0: no slices; Y is the bias)
            const std::size_t groups = (nvec + Vecs * kPanelsPerTask - 1) / (Vecs * kPanelsPerTask);
            const std::size_t slices = (p.in + kc - 1) / kc, tasks = slices * groups;
            const double pack_work = static_cast<double>(p.in) * static_cast<double>(outp);
            parallel_for(tasks, useful_workers(p.threads, tasks, pack_work), pack_work, [&](std::size_t t, unsigned) {
                const std::size_t k0 = t / groups * kc, kn = p.in - k0 < kc ? p.in - k0 : kc;
                const std::size_t first = t % groups * Vecs * kPanelsPerTask;
                for (std::size_t c0 = first; c0 < nvec && c0 < first + Vecs * kPanelsPerTask; c0 += Vecs) {
                    const std::size_t pw = (nvec - c0 < Vecs ? nvec - c0 : Vecs) * W;
                    pack_panel(p, k0, kn, c0 * W, pw, panels + k0 * outp + kn * c0 * W);
                }
            });
        }
        const std::size_t step = static_cast<std::size_t>(per_worker(p));
        parallel_for((p.rows + kRows - 1) / kRows, workers(p), work(p), [&](std::size_t block, unsigned worker) {
            float* c = reinterpret_cast<float*>(scratch + worker * step);  // (kRows, outp)
            float* own_panel = c + kRows * outp;                           // (kc, Vecs·W) unless shared
            float* xs = own_panel + (shared ? 0 : kc * Vecs * W);          // (kc, kRows) when pack_x
            const std::size_t b0 = block * kRows;
            const std::size_t nb = p.rows - b0 < kRows ? p.rows - b0 : kRows;
            for (std::size_t r = 0; r < nb; ++r)
                for (std::size_t o = 0; o < outp; ++o) c[r * outp + o] = p.bias && o < p.out ? p.bias[o] : 0.0f;
            for (std::size_t k0 = 0; k0 < p.in; k0 += kc) {
                const std::size_t kn = p.in - k0 < kc ? p.in - k0 : kc;
                const float* x = p.x + b0 * p.x_stride + k0 * p.x_k_stride;  // (nb, kn), x_stride and x_k_stride apart
                std::size_t a_row = p.x_stride, a_k = p.x_k_stride;
                if (pack_x) {
                    for (std::size_t k = 0; k < kn; ++k)
                        for (std::size_t r = 0; r < nb; ++r) xs[k * kRows + r] = x[r * p.x_stride + k * p.x_k_stride];
                    x = xs, a_row = 1, a_k = kRows;
                }
                for (std::size_t c0 = 0; c0 < nvec; c0 += Vecs) {
                    const std::size_t pv = nvec - c0 < Vecs ? nvec - c0 : Vecs, pw = pv * W;
                    const float* wp = shared ? panels + k0 * outp + kn * c0 * W : own_panel;
                    if (!shared) pack_panel(p, k0, kn, c0 * W, pw, own_panel);
                    for (std::size_t r0 = 0; r0 < nb; r0 += Rows) {
                        with_count<Rows>(nb - r0, [&](auto nr_) {
                            with_count<Vecs>(pv, [&](auto nv_) {
                                constexpr std::size_t NR = decltype(nr_)::value, NV = decltype(nv_)::value;
                                Block<O, NR, NV> acc;
                                float* dst = c + r0 * outp + c0 * W;
                                acc.load(dst, outp);
                                accumulate(acc, kn, x + r0 * a_row, a_row, a_k, wp, pw);  // (NR, kn) x (kn, NV·W)
                                acc.store(dst, outp);
                            });
                        });
                    }
                }
            }
            for (std::size_t r = 0; r < nb; ++r)
                for (std::size_t o = 0; o < p.out; ++o) p.y[(b0 + r) * p.y_stride + o] = c[r * outp + o];
        });
    }
};

}  // namespace
}  // namespace xattn::kernels
