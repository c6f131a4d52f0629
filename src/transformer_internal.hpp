// What TransformerEncoderLayer's forward (transformer_layer.cpp) and backward (transformer_layer_backward.cpp)
// share: the workspace of a call. Not installed: an implementation header.
#pragma once

#include <algorithm>
#include <cstdint>

#include "layer_ops.hpp"
#include "xattn/transformer.hpp"

namespace xattn {

// self_attn's view of a call's masks: their kinds and data, not their shapes (the plan has those), so that a run
// copies no vector and allocates nothing.
inline MhaMasks attention_masks(const EncoderLayerMasks& m) {
    const auto data_of = [](const MaskRef& r) { return MaskRef{r.kind, r.bools, r.values, {}}; };
    return MhaMasks{data_of(m.src_key_padding_mask), data_of(m.src_mask)};
}

// One call's buffers, carved from the caller's workspace; rows in src's order (R = L·N).
struct TransformerEncoderLayer::Scratch {
    // The forward's, kept for the backward.
    float* attn_in;  // (R, E)  pre-norm: norm1(x), self_attn's input; post-norm: unused (x itself)
    float* attn;     // (R, E)  dropout1(self_attn(…))
    float* h1;       // (R, E)  x + attn: the first residual sum
    float* ff_in;    // (R, E)  the feed-forward's input: norm1(h1) post-norm, norm2(h1) pre-norm
    float* f;        // (R, F)  linear1(ff_in), before the activation
    float* g;        // (R, F)  dropout(activation(f)), linear2's input
    float* z;        // (R, E)  dropout2(linear2(g))
    float* h2;       // (R, E)  post-norm: ff_in + z, norm2's input; pre-norm: unused (the output is h1 + z)
    void* mha;       // self_attn's workspace: its forward's, or its backward's in a backward call
    void* linear;    // the products' scratch
    // The backward's.
    float* dz;       // (R, E)  the gradient reaching z (before dropout2)
    float* dg;       // (R, F)  … reaching g, then f
    float* d_ff_in;  // (R, E)  … reaching ff_in
    float* dh1;      // (R, E)  … reaching h1
    float* da;       // (R, E)  … reaching self_attn's output (before dropout1)
    float* grads;    // (R, E) self_attn's gradient for its input (query = key = value), with room for (3, R, E)
    void* norm;      // layer_norm_rows_backward's scratch

    template <class Carver>
    static void carve(const TransformerEncoderLayer& m, const EncoderLayerPlan& plan, Carver& c, Scratch* out) {
        // 64-bit counts: where size_t is 32-bit (wasm32) the total must not wrap.
        const std::uint64_t R = plan.rows, E = m.config_.d_model, F = m.config_.dim_feedforward;
        const bool pre = m.config_.norm_first, bwd = plan.backward;
        Scratch x{};
        x.attn_in = c.template take<float>(pre ? R * E : 0);
        x.attn = c.template take<float>(R * E);
        x.h1 = c.template take<float>(R * E);
        x.ff_in = c.template take<float>(R * E);
        x.f = c.template take<float>(R * F);
        x.g = c.template take<float>(R * F);
        x.z = c.template take<float>(R * E);
        x.h2 = c.template take<float>(pre ? 0 : R * E);
        x.mha = c.template take<unsigned char>(
            std::max<std::uint64_t>(plan.attention.workspace_bytes, bwd ? plan.attention_backward.workspace_bytes : 0));
        const std::uint64_t products =
            std::max(detail::Products::workspace_bytes(*plan.kernel_set, plan.threads, plan.rows, m.config_.d_model,
                                                       m.config_.dim_feedforward, bwd),
                     detail::Products::workspace_bytes(*plan.kernel_set, plan.threads, plan.rows,
                                                       m.config_.dim_feedforward, m.config_.d_model, bwd));
        x.linear = c.template take<unsigned char>(products);
        x.dz = c.template take<float>(bwd ? R * E : 0);
        x.dg = c.template take<float>(bwd ? R * F : 0);
        x.d_ff_in = c.template take<float>(bwd ? R * E : 0);
        x.dh1 = c.template take<float>(bwd ? R * E : 0);
        x.da = c.template take<float>(bwd ? R * E : 0);
        x.grads = c.template take<float>(bwd ? 3 * R * E : 0);
        x.norm = c.template take<unsigned char>(bwd ? detail::layer_norm_backward_scratch(plan.rows, m.config_.d_model) : 0);
        if (out) *out = x;
    }
};

}  // namespace xattn
