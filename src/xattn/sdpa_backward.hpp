// The backward pass of scaled_dot_product_attention: given gradOutput (…, L, Ev), the gradients
// reaching query (…, L, E), key (…, S, E) and value (…, S, Ev), for every forward feature (masks,
// causal in both alignments, scale, GQA, dropout with the same seed, Ev != E, fully masked rows).
//
// With P = softmax(scores) the weights, Pd = P after dropout, and D_i = Σ_j P_ij dP_ij:
//   dV = Pdᵀ dO          dP = (dO Vᵀ) ⊙ dropout multiplier
//   dS = P ⊙ (dP − D)     dQ = scale · dS K      dK = scale · dSᵀ Q
// Under GQA a key/value head's gradient sums over the query heads that read it. A fully masked row
// has P = 0, so it contributes nothing and its dQ is 0, never NaN.
// ref: Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness" (2022),
//      Algorithm 4: the weights are recomputed from the row's log-sum-exp saved by the forward pass.
#pragma once

#include "xattn/sdpa.hpp"
#include "xattn/xarray.hpp"

namespace xattn {

struct GradientResult {
    xt::xarray<float> output;      // (…, L, Ev), the forward result
    xt::xarray<float> weights;     // (…, L, S), the forward's weights when need_weights, else empty: shape (0,)
    xt::xarray<float> grad_query;  // (…, Hq, L, E)
    xt::xarray<float> grad_key;    // (…, Hkv, S, E)
    xt::xarray<float> grad_value;  // (…, Hkv, S, Ev)
};

// Validates a backward call: the forward's rules, plus grad_output shaped like the output. With need_weights
// the run also returns the forward's weights (plan.weights_shape), from the same forward. Never throws.
Status plan_sdpa_backward(const Shape& query, const Shape& key, const Shape& value, const Shape& grad_output,
                          MaskKind mask_kind, const Shape& mask_shape, const SdpaSettings& settings, SdpaPlan* plan);

// Computes a validated plan: the forward (output, each row's log-sum-exp and, when the plan has need_weights and
// `weights` is given, the weights), then the gradients. Buffers hold numel of output, query, key and value
// shapes respectively, and weights numel(plan.weights_shape); `workspace` holds plan.workspace_bytes (set by
// plan_sdpa_backward). Allocates nothing and never throws.
void run_sdpa_backward(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                       const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                       float* grad_key, float* grad_value, float* weights, void* workspace);
// The same with a workspace of its own (may throw std::bad_alloc).
void run_sdpa_backward(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                       const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                       float* grad_key, float* grad_value, float* weights = nullptr);

// Throws std::invalid_argument naming the argument and the shapes.
GradientResult scaled_dot_product_attention_backward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                                     const xt::xarray<float>& value,
                                                     const xt::xarray<float>& grad_output,
                                                     const SdpaOptions& options = {});

}  // namespace xattn
