// linear and layer_norm with the semantics of torch.nn.functional.linear and torch.nn.functional.layer_norm,
// forward and backward: what goes around a stack of TransformerEncoderLayers (an embedding's projection, a
// final LayerNorm, a head).
//
// Dims: "…" any leading dims (R rows in all, their product), `in` / `out` a linear's sizes, D the elements of
// layer_norm's normalized_shape (its input's trailing dims).
//
// The same two layers as the attention calls: plan_* validates and never throws (a Status), run_* computes a
// validated plan in a caller's workspace of plan.workspace_bytes and allocates nothing; the xtensor functions
// throw std::invalid_argument with the planner's message.
#pragma once

#include <cstdint>
#include <optional>

#include "xattn/dims.hpp"
#include "xattn/xarray.hpp"

namespace xattn {

namespace kernels {
struct KernelSet;
}

// A feed-forward block's activation (TransformerEncoderLayer's `activation`). gelu is the exact (erf) form,
// PyTorch's approximate = 'none'.
enum class Activation { relu, gelu };

// ---------------------------------------------------------------- linear
// output (…, out) = input (…, in) · weightᵀ (in, out) + bias (out); weight (out, in) as PyTorch stores it.
struct LinearPlan {
    Shape input_shape, weight_shape, output_shape;
    std::size_t rows = 0, in = 0, out = 0;  // rows: the product of input's leading dims
    bool has_bias = false;
    bool backward = false;  // planned by plan_linear_backward
    const kernels::KernelSet* kernel_set = nullptr;
    unsigned threads = 1;  // num_threads() when planned
    std::uint64_t workspace_bytes = 0;
};

// `bias` null: no bias. Never throws.
Status plan_linear(const Shape& input, const Shape& weight, const Shape* bias, LinearPlan* plan);
// The forward's rules, and grad_output shaped like the output. Never throws.
Status plan_linear_backward(const Shape& input, const Shape& weight, const Shape* bias, const Shape& grad_output,
                            LinearPlan* plan);
// `bias` is read only when plan.has_bias. Allocates nothing and never throws.
void run_linear(const LinearPlan& plan, const float* input, const float* weight, const float* bias, float* output,
                void* workspace);
// grad_input (…, in) = grad_output · weight, grad_weight (out, in) = grad_outputᵀ · input, grad_bias (out) = the
// sum of grad_output's rows (written only when plan.has_bias). Allocates nothing and never throws.
void run_linear_backward(const LinearPlan& plan, const float* input, const float* weight, const float* grad_output,
                         float* grad_input, float* grad_weight, float* grad_bias, void* workspace);

struct LinearGradients {
    xt::xarray<float> grad_input, grad_weight;
    xt::xarray<float> grad_bias;  // (out,), or an empty (0,) array without a bias
};

xt::xarray<float> linear(const xt::xarray<float>& input, const xt::xarray<float>& weight);
xt::xarray<float> linear(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                         const xt::xarray<float>& bias);
LinearGradients linear_backward(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                                const xt::xarray<float>& grad_output);
LinearGradients linear_backward(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                                const xt::xarray<float>& bias, const xt::xarray<float>& grad_output);

// ---------------------------------------------------------------- layer_norm
// Each row of D = numel(normalized_shape) trailing elements: (x − mean) / sqrt(var + eps) · weight + bias, the
// variance biased (divided by D), as PyTorch's. Means and variances are summed in float64.
struct LayerNormPlan {
    Shape input_shape, normalized_shape;
    std::size_t rows = 0, size = 0;  // R rows of D elements
    bool has_weight = false, has_bias = false;
    double eps = 1e-5;
    bool backward = false;
    unsigned threads = 1;
    std::uint64_t workspace_bytes = 0;
};

// `weight` and `bias` null when absent; each present one must have normalized_shape's shape. eps must be
// finite and >= 0. Never throws.
Status plan_layer_norm(const Shape& input, const Shape& normalized_shape, const Shape* weight, const Shape* bias,
                       double eps, LayerNormPlan* plan);
Status plan_layer_norm_backward(const Shape& input, const Shape& normalized_shape, const Shape* weight,
                                const Shape* bias, double eps, const Shape& grad_output, LayerNormPlan* plan);
void run_layer_norm(const LayerNormPlan& plan, const float* input, const float* weight, const float* bias,
                    float* output, void* workspace);
// grad_weight and grad_bias (D) are written only when the plan has them. Allocates nothing and never throws.
void run_layer_norm_backward(const LayerNormPlan& plan, const float* input, const float* weight,
                             const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias,
                             void* workspace);

struct LayerNormOptions {
    std::optional<xt::xarray<float>> weight, bias;  // normalized_shape each
    double eps = 1e-5;
};

struct LayerNormGradients {
    xt::xarray<float> grad_input;
    xt::xarray<float> grad_weight, grad_bias;  // normalized_shape, or empty (0,) arrays when absent
};

xt::xarray<float> layer_norm(const xt::xarray<float>& input, const Shape& normalized_shape,
                             const LayerNormOptions& options = {});
LayerNormGradients layer_norm_backward(const xt::xarray<float>& input, const Shape& normalized_shape,
                                       const xt::xarray<float>& grad_output, const LayerNormOptions& options = {});

}  // namespace xattn
