// linear and layer_norm (xattn/layers.hpp): their planners, runs and the xtensor API.
#include "xattn/layers.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"
#include "layer_ops.hpp"
#include "xattn/threads.hpp"

namespace xattn {
namespace {

double num(std::size_t n) { return static_cast<double>(n); }

Shape shape_of(const xt::xarray<float>& a) { return Shape(a.shape().begin(), a.shape().end()); }

Status plan_linear_call(const Shape& input, const Shape& weight, const Shape* bias, bool backward, LinearPlan* plan) {
    const Function fn = backward ? Function::linear_backward : Function::linear;
    const Argument in_arg = Argument::input, w_arg = Argument::weight;
    if (input.empty()) return Status::fail(fn, Message::linear_input_rank, {in_arg, w_arg}, {}, {input, weight});
    if (weight.size() != 2) return Status::fail(fn, Message::linear_weight_rank, {in_arg, w_arg}, {}, {input, weight});
    const std::size_t out = weight[0], in = weight[1];
    if (input.back() != in)
        return Status::fail(fn, Message::linear_in_mismatch, {in_arg, w_arg}, {num(input.back()), num(in)},
                            {input, weight});
    if (bias && *bias != Shape{out})
        return Status::fail(fn, Message::linear_bias_shape, {in_arg, w_arg, Argument::bias}, {num(out)},
                            {input, weight, *bias});
    Shape output = input;
    output.back() = out;
    for (const auto& [name, shape] :
         {std::pair{in_arg, input}, std::pair{w_arg, weight}, std::pair{Argument::output, output}})
        if (Status st = check_tensor_size(fn, name, shape); !st.ok()) return st;
    LinearPlan p;
    p.input_shape = input, p.weight_shape = weight, p.output_shape = output;
    p.rows = numel(Shape(input.begin(), input.end() - 1));
    p.in = in, p.out = out;
    p.has_bias = bias != nullptr;
    p.backward = backward;
    p.kernel_set = &kernels::active_kernels();
    p.threads = num_threads();
    p.workspace_bytes = Carver::kSlack + detail::Products::workspace_bytes(*p.kernel_set, p.threads, p.rows, in, out, backward);
    *plan = std::move(p);
    return {};
}

}  // namespace

Status plan_linear(const Shape& input, const Shape& weight, const Shape* bias, LinearPlan* plan) {
    return plan_linear_call(input, weight, bias, false, plan);
}

Status plan_linear_backward(const Shape& input, const Shape& weight, const Shape* bias, const Shape& grad_output,
                            LinearPlan* plan) {
    LinearPlan p;
    if (Status st = plan_linear_call(input, weight, bias, true, &p); !st.ok()) return st;
    if (grad_output != p.output_shape)
        return Status::fail(Function::linear_backward, Message::shape_mismatch,
                            {Argument::grad_output, Argument::output}, {}, {grad_output, p.output_shape});
    *plan = std::move(p);
    return {};
}

void run_linear(const LinearPlan& plan, const float* input, const float* weight, const float* bias, float* output,
                void* workspace) {
    Carver aligned(workspace);
    const detail::Products products{plan.kernel_set, plan.threads, aligned.take<unsigned char>(0)};
    products.forward(plan.rows, plan.in, plan.out, input, weight, plan.has_bias ? bias : nullptr, output);
}

void run_linear_backward(const LinearPlan& plan, const float* input, const float* weight, const float* grad_output,
                         float* grad_input, float* grad_weight, float* grad_bias, void* workspace) {
    Carver aligned(workspace);
    const detail::Products products{plan.kernel_set, plan.threads, aligned.take<unsigned char>(0)};
    products.input_grad(plan.rows, plan.in, plan.out, grad_output, weight, grad_input);
    products.weight_grad(plan.rows, plan.in, plan.out, grad_output, input, grad_weight);
    if (plan.has_bias) detail::column_sums(grad_output, plan.rows, plan.out, grad_bias, plan.threads);
}

namespace {

xt::xarray<float> linear_call(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                              const xt::xarray<float>* bias) {
    const Shape bias_shape = bias ? shape_of(*bias) : Shape{};
    LinearPlan plan;
    if (Status st = plan_linear(shape_of(input), shape_of(weight), bias ? &bias_shape : nullptr, &plan); !st.ok())
        throw std::invalid_argument(st.message());
    xt::xarray<float> output = xt::xarray<float>::from_shape(plan.output_shape);
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_linear(plan, input.data(), weight.data(), bias ? bias->data() : nullptr, output.data(), workspace.data());
    return output;
}

LinearGradients linear_backward_call(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                                     const xt::xarray<float>* bias, const xt::xarray<float>& grad_output) {
    const Shape bias_shape = bias ? shape_of(*bias) : Shape{};
    LinearPlan plan;
    if (Status st = plan_linear_backward(shape_of(input), shape_of(weight), bias ? &bias_shape : nullptr,
                                         shape_of(grad_output), &plan);
        !st.ok())
        throw std::invalid_argument(st.message());
    LinearGradients g;
    g.grad_input = xt::xarray<float>::from_shape(plan.input_shape);
    g.grad_weight = xt::xarray<float>::from_shape(plan.weight_shape);
    g.grad_bias = xt::xarray<float>::from_shape(bias ? Shape{plan.out} : Shape{0});
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_linear_backward(plan, input.data(), weight.data(), grad_output.data(), g.grad_input.data(),
                        g.grad_weight.data(), g.grad_bias.data(), workspace.data());
    return g;
}

}  // namespace

xt::xarray<float> linear(const xt::xarray<float>& input, const xt::xarray<float>& weight) {
    return linear_call(input, weight, nullptr);
}

xt::xarray<float> linear(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                         const xt::xarray<float>& bias) {
    return linear_call(input, weight, &bias);
}

LinearGradients linear_backward(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                                const xt::xarray<float>& grad_output) {
    return linear_backward_call(input, weight, nullptr, grad_output);
}

LinearGradients linear_backward(const xt::xarray<float>& input, const xt::xarray<float>& weight,
                                const xt::xarray<float>& bias, const xt::xarray<float>& grad_output) {
    return linear_backward_call(input, weight, &bias, grad_output);
}

// ---------------------------------------------------------------- layer_norm

namespace {

Status plan_layer_norm_call(const Shape& input, const Shape& normalized_shape, const Shape* weight, const Shape* bias,
                            double eps, bool backward, LayerNormPlan* plan) {
    const Function fn = backward ? Function::layer_norm_backward : Function::layer_norm;
    const Argument in_arg = Argument::input, ns_arg = Argument::normalized_shape;
    if (normalized_shape.empty())
        return Status::fail(fn, Message::norm_shape_empty, {in_arg, ns_arg}, {}, {input, normalized_shape});
    if (normalized_shape.size() > input.size() ||
        !std::equal(normalized_shape.begin(), normalized_shape.end(), input.end() - normalized_shape.size()))
        return Status::fail(fn, Message::norm_shape_trailing, {in_arg, ns_arg}, {}, {input, normalized_shape});
    for (const auto& [arg, shape] : {std::pair{Argument::weight, weight}, std::pair{Argument::bias, bias}})
        if (shape && *shape != normalized_shape)
            return Status::fail(fn, Message::norm_affine_shape, {in_arg, ns_arg, arg}, {},
                                {input, normalized_shape, *shape});
    if (!(eps >= 0.0 && std::isfinite(eps)))
        return Status::fail(fn, Message::finite_nonnegative, {Argument::eps}, {eps});
    if (Status st = check_tensor_size(fn, in_arg, input); !st.ok()) return st;
    LayerNormPlan p;
    p.input_shape = input, p.normalized_shape = normalized_shape;
    p.size = numel(normalized_shape);
    p.rows = numel(Shape(input.begin(), input.end() - normalized_shape.size()));
    p.has_weight = weight != nullptr, p.has_bias = bias != nullptr;
    p.eps = eps;
    p.backward = backward;
    p.threads = num_threads();
    p.workspace_bytes = backward ? Carver::kSlack + detail::layer_norm_backward_scratch(p.rows, p.size) : 0;
    *plan = std::move(p);
    return {};
}

}  // namespace

Status plan_layer_norm(const Shape& input, const Shape& normalized_shape, const Shape* weight, const Shape* bias,
                       double eps, LayerNormPlan* plan) {
    return plan_layer_norm_call(input, normalized_shape, weight, bias, eps, false, plan);
}

Status plan_layer_norm_backward(const Shape& input, const Shape& normalized_shape, const Shape* weight,
                                const Shape* bias, double eps, const Shape& grad_output, LayerNormPlan* plan) {
    LayerNormPlan p;
    if (Status st = plan_layer_norm_call(input, normalized_shape, weight, bias, eps, true, &p); !st.ok()) return st;
    if (grad_output != input)
        return Status::fail(Function::layer_norm_backward, Message::shape_mismatch,
                            {Argument::grad_output, Argument::input}, {}, {grad_output, input});
    *plan = std::move(p);
    return {};
}

void run_layer_norm(const LayerNormPlan& plan, const float* input, const float* weight, const float* bias,
                    float* output, void* /*workspace*/) {
    detail::layer_norm_rows(input, plan.rows, plan.size, plan.has_weight ? weight : nullptr,
                            plan.has_bias ? bias : nullptr, plan.eps, output, plan.threads);
}

void run_layer_norm_backward(const LayerNormPlan& plan, const float* input, const float* weight,
                             const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias,
                             void* workspace) {
    Carver aligned(workspace);
    detail::layer_norm_rows_backward(input, plan.rows, plan.size, plan.has_weight ? weight : nullptr, plan.eps,
                                     grad_output, grad_input, false, plan.has_weight ? grad_weight : nullptr,
                                     plan.has_bias ? grad_bias : nullptr,
                                     aligned.take<unsigned char>(detail::layer_norm_backward_scratch(plan.rows, plan.size)),
                                     plan.threads);
}

namespace {

struct AffineShapes {
    Shape weight, bias;
    const Shape* w = nullptr;
    const Shape* b = nullptr;
    explicit AffineShapes(const LayerNormOptions& o) {
        if (o.weight) weight = shape_of(*o.weight), w = &weight;
        if (o.bias) bias = shape_of(*o.bias), b = &bias;
    }
};

}  // namespace

xt::xarray<float> layer_norm(const xt::xarray<float>& input, const Shape& normalized_shape,
                             const LayerNormOptions& o) {
    const AffineShapes affine(o);
    LayerNormPlan plan;
    if (Status st = plan_layer_norm(shape_of(input), normalized_shape, affine.w, affine.b, o.eps, &plan); !st.ok())
        throw std::invalid_argument(st.message());
    xt::xarray<float> output = xt::xarray<float>::from_shape(plan.input_shape);
    run_layer_norm(plan, input.data(), o.weight ? o.weight->data() : nullptr, o.bias ? o.bias->data() : nullptr,
                   output.data(), nullptr);
    return output;
}

LayerNormGradients layer_norm_backward(const xt::xarray<float>& input, const Shape& normalized_shape,
                                       const xt::xarray<float>& grad_output, const LayerNormOptions& o) {
    const AffineShapes affine(o);
    LayerNormPlan plan;
    if (Status st = plan_layer_norm_backward(shape_of(input), normalized_shape, affine.w, affine.b, o.eps,
                                             shape_of(grad_output), &plan);
        !st.ok())
        throw std::invalid_argument(st.message());
    LayerNormGradients g;
    g.grad_input = xt::xarray<float>::from_shape(plan.input_shape);
    g.grad_weight = xt::xarray<float>::from_shape(o.weight ? normalized_shape : Shape{0});
    g.grad_bias = xt::xarray<float>::from_shape(o.bias ? normalized_shape : Shape{0});
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_layer_norm_backward(plan, input.data(), o.weight ? o.weight->data() : nullptr, grad_output.data(),
                            g.grad_input.data(), g.grad_weight.data(), g.grad_bias.data(), workspace.data());
    return g;
}

}  // namespace xattn
