// The lesson's four steps, written plainly with xtensor in float64: the oracle every kernel
// (row kernel, SIMD kernels, wasm builds, the backward pass) is tested against. Slow on purpose;
// never used by the API.
#pragma once

#include "xattn/sdpa.hpp"
#include "xattn/sdpa_backward.hpp"

namespace xattn {

// Same arguments, validation and semantics as scaled_dot_product_attention (the rules written again from their
// definitions); the weights are always returned, the scores when asked for. Throws std::invalid_argument like the API.
AttentionResult reference_sdpa(const xt::xarray<float>& query, const xt::xarray<float>& key,
                               const xt::xarray<float>& value, const SdpaOptions& options = {});

// The same in float64 from float64 inputs, for finite-difference checks of the gradients.
struct ReferenceResult64 {
    xt::xarray<double> output;   // (…, L, Ev)
    xt::xarray<double> weights;  // (…, L, S), after dropout
    xt::xarray<double> scores;   // (…, L, S) at options.return_scores, or empty
};
ReferenceResult64 reference_sdpa_f64(const xt::xarray<double>& query, const xt::xarray<double>& key,
                                     const xt::xarray<double>& value, const SdpaOptions& options = {});

// The gradients by the textbook formulas on whole matrices, in float64.
GradientResult reference_sdpa_backward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                       const xt::xarray<float>& value, const xt::xarray<float>& grad_output,
                                       const SdpaOptions& options = {});

}  // namespace xattn
