// The parts of MultiheadAttention that its forward (mha.cpp) and backward (mha_backward.cpp) share:
// the forward's workspace and the order of an input's rows. Not installed: an implementation header.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "xattn/mha.hpp"

namespace xattn {
namespace detail {

// (n, t) of row r of an input laid out (T, N, X), or (N, T, X) with batch_first.
struct RowOrder {
    bool batch_first;
    std::size_t N, T;
    std::size_t n(std::size_t r) const { return batch_first ? r / T : r % N; }
    std::size_t t(std::size_t r) const { return batch_first ? r % T : r / N; }
};

}  // namespace detail

// What one forward call works in, carved from the caller's workspace. Rows are in the inputs' own
// order ((T, N) or, with batch_first, (N, T)), so every projection is one product over all of them.
struct MultiheadAttention::Scratch {
    float* qh;            // (N, H, L, hd)        projected queries, split into heads
    float* kh;            // (N, H, S_total, hd)  projected keys (+ bias_k, + a zero key)
    float* vh;            // (N, H, S_total, hd)  projected values likewise
    float* rows;          // (max(L, S)·N, E)     one input's projected rows
    void* mask;           // the heads' SDPA mask (plan.mask): bytes or floats
    float* attn;          // (N, H, L, hd)        the heads' attention output
    float* head_weights;  // (N, H, L, S_total)   every head's weights, when they are averaged
    float* merged;        // (L·N, E)             the heads side by side, in the query's row order
    void* linear;         // the linear kernel's scratch, for the largest projection
    void* attention;      // the attention kernel's scratch (plan.attention.workspace_bytes)

    template <class Carver>
    static void carve(const MultiheadAttention& m, const MhaPlan& plan, Carver& c, Scratch* out) {
        // 64-bit counts: where size_t is 32-bit (wasm32) the total must not wrap.
        const std::uint64_t E = m.config_.embed_dim, H = m.config_.num_heads, N = plan.N, L = plan.L, S = plan.S,
                            St = plan.S_total;
        Scratch x;
        x.qh = c.template take<float>(N * L * E);
        x.kh = c.template take<float>(N * St * E);
        x.vh = c.template take<float>(N * St * E);
        x.rows = c.template take<float>(std::max(L, S) * N * E);
        x.mask = c.template take<unsigned char>(std::uint64_t{plan.mask.elements()} *
                                       (plan.mask.kind == MaskKind::boolean ? 1 : sizeof(float)) *
                                       (plan.mask.kind == MaskKind::none ? 0 : 1));
        x.attn = c.template take<float>(N * L * E);
        x.head_weights = c.template take<float>(plan.need_weights && plan.average_attn_weights ? N * H * L * St : 0);
        x.merged = c.template take<float>(L * N * E);
        std::uint64_t linear = 0;
        for (const auto& [rows, in] : {std::pair{plan.query_rows, m.config_.embed_dim}, std::pair{plan.key_rows, m.kdim()},
                                       std::pair{plan.key_rows, m.vdim()}}) {
            kernels::LinearProblem p;
            p.rows = rows, p.in = in, p.out = m.config_.embed_dim;
            p.threads = plan.attention.threads;
            linear = std::max(linear, kernels::linear_workspace_bytes(*plan.attention.kernel_set, p));
        }
        x.linear = c.template take<unsigned char>(linear);
        x.attention = c.template take<unsigned char>(plan.attention.workspace_bytes);
        if (out) *out = x;
    }
};


}  // namespace xattn
