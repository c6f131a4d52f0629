// torch.nn.MultiheadAttention written out plainly in float64, forward and backward: the oracle fuzz_mha checks
// the module against (and which tests/test_reference_mha.cpp checks against PyTorch's fixtures). It shares
// nothing with src/mha.cpp but the module's parameters: its own layouts, its own mask rules, its own loops.
// Slow on purpose; never used by the API.
#pragma once

#include <map>
#include <string>

#include <xtensor/xarray.hpp>

#include "xattn/mha.hpp"

namespace xattn {

// Each result, and beside it the same formulas evaluated on magnitudes (|x|, |W|, the weights as they are):
// the sum of the sizes of the terms that make each result. float32 rounds each sum it forms to a fraction of
// that size, so a comparison can allow one unit roundoff of it beside its tolerance where terms cancel. Where
// a result depends on the softmax, the magnitudes grow with the largest score's own magnitude, which sets how
// far float32 rounding can move the exponentials.
struct ReferenceMhaResult {
    xt::xarray<double> output;  // like query
    xt::xarray<double> weights; // (N, L, S_total) averaged over heads or (N, H, L, S_total); no N unbatched; after dropout
    // With grad_output: the gradients of Σ grad_output ⊙ output, by the chain rule.
    xt::xarray<double> grad_query, grad_key, grad_value;  // like query, key, value
    std::map<std::string, xt::xarray<double>> grad_parameters;  // PyTorch's state_dict names and shapes
};

struct ReferenceMha {
    ReferenceMhaResult value;
    ReferenceMhaResult terms;  // the sizes of the terms summed, elementwise beside `value`
};

// The forward (and, given grad_output, the backward) of `module` with the options' masks and settings, in
// PyTorch's semantics: layouts (L, N, E), (N, L, E) with batch_first, (L, E) unbatched; masks in MHA polarity;
// is_causal as the causal rule (with attn_mask too), and the rules of MhaSettings (window, soft-cap, ALiBi, key lengths) from
// their definitions; add_bias_kv and add_zero_attn keys never masked;
// dropout (training) with the library's (seed, position) decisions. A row with every key masked gives 0, as the
// library does (PyTorch gives NaN). Shapes are assumed valid: plan the call with the module first.
ReferenceMha reference_mha(const MultiheadAttention& module, const xt::xarray<float>& query,
                           const xt::xarray<float>& key, const xt::xarray<float>& value,
                           const MhaForwardOptions& options, const xt::xarray<float>* grad_output = nullptr);

}  // namespace xattn
