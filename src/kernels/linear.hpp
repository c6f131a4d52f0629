// Y (rows, out) = X (rows, in) · Wᵀ (in, out) + bias on one ops type: MultiheadAttention's projections
// and every product of its backward, and the TransformerEncoderLayer's feed-forward products, forward and
// backward (X read down its columns, W stored (in, out): kernels.hpp).
//
// The sums are float32, as PyTorch's are. (They were float64 once, after float32 sums missed the golden
// tolerance on the E = 64 MultiheadAttention fixture; that fixture's parameters saturated the softmax so
// much that PyTorch's own float32 forward missed it too. With parameters at PyTorch's init scale, float32
// sums pass with room to spare, at twice the speed of float64 lanes.)
//
// Blocked like any GEMM, so scratch stays O(blocks) whatever E is, and the micro-kernel (micro.hpp:
// a = X rows or columns, read in place; B = packed Wᵀ) reads B contiguously:
//   Wᵀ panel (kDepth, Vecs·W)    a slice of `in` × one panel of columns, rows contiguous (rows of a whole
//                                (in, out) matrix are 4·out bytes apart: 2 KiB at out = 512, so every row
//                                of a panel would fall in the same L1 set); past `out`: 0
//   C        (kRows, outp)       the sums across slices, outp = out rounded up to whole vectors
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
    static constexpr std::size_t kRows = 64;     // rows of X sharing each packed Wᵀ panel
    static constexpr std::size_t kDepth = 256;   // slice of `in` per packed block

    static std::size_t padded(std::size_t out) { return (out + W - 1) / W * W; }
    static std::size_t depth(const LinearProblem& p) { return p.in < kDepth ? p.in : kDepth; }
    // One task per block of kRows rows: each block packs its own Wᵀ panels in its worker's scratch, so a row's
    // sums come out of the same code whichever worker runs it.
    static std::uint64_t per_worker(const LinearProblem& p) {  // 64-bit: out may be a huge S (backward)
        const std::uint64_t kc = depth(p);
        return worker_stride((kc * Vecs * W + std::uint64_t{kRows} * padded(p.out)) * sizeof(float));
    }
    static double work(const LinearProblem& p) {  // FLOPs
        return 2.0 * static_cast<double>(p.rows) * static_cast<double>(p.in) * static_cast<double>(p.out);
    }
    static unsigned workers(const LinearProblem& p) {
        return useful_workers(p.threads, (p.rows + kRows - 1) / kRows, work(p));
    }
    static std::uint64_t workspace(const LinearProblem& p) { return workers(p) * per_worker(p); }

    static void run(const LinearProblem& p, void* workspace) {
        const std::size_t outp = padded(p.out), nvec = outp / W, kc = depth(p);
        const std::size_t step = static_cast<std::size_t>(per_worker(p));
        parallel_for((p.rows + kRows - 1) / kRows, workers(p), work(p), [&](std::size_t block, unsigned worker) {
            float* wp = reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) + worker * step);  // (kc, Vecs·W)
            float* c = wp + kc * Vecs * W;                                                                 // (kRows, outp)
            const std::size_t b0 = block * kRows;
            const std::size_t nb = p.rows - b0 < kRows ? p.rows - b0 : kRows;
            for (std::size_t r = 0; r < nb; ++r)
                for (std::size_t o = 0; o < outp; ++o) c[r * outp + o] = p.bias && o < p.out ? p.bias[o] : 0.0f;
            for (std::size_t k0 = 0; k0 < p.in; k0 += kc) {
                const std::size_t kn = p.in - k0 < kc ? p.in - k0 : kc;
                const float* x = p.x + b0 * p.x_stride + k0 * p.x_k_stride;  // (nb, kn), x_stride and x_k_stride apart
                for (std::size_t c0 = 0; c0 < nvec; c0 += Vecs) {
                    const std::size_t pv = nvec - c0 < Vecs ? nvec - c0 : Vecs, pw = pv * W;
                    for (std::size_t k = 0; k < kn; ++k)
                        for (std::size_t o = 0; o < pw; ++o) {
                            const std::size_t col = c0 * W + o;
                            const std::size_t at = p.w_transposed ? (k0 + k) * p.out + col : col * p.in + k0 + k;
                            wp[k * pw + o] = col < p.out ? p.w[at] : 0.0f;
                        }
                    for (std::size_t r0 = 0; r0 < nb; r0 += Rows) {
                        with_count<Rows>(nb - r0, [&](auto nr_) {
                            with_count<Vecs>(pv, [&](auto nv_) {
                                constexpr std::size_t NR = decltype(nr_)::value, NV = decltype(nv_)::value;
                                Block<O, NR, NV> acc;
                                float* dst = c + r0 * outp + c0 * W;
                                acc.load(dst, outp);
                                accumulate(acc, kn, x + r0 * p.x_stride, p.x_stride, p.x_k_stride, wp, pw);  // (NR, kn) x (kn, NV·W)
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
