// torch.nn.TransformerEncoderLayer's backward: the gradients of Σ grad_output ⊙ output with respect to src and
// every parameter, through the forward's steps (transformer_layer.cpp) in reverse. The backward needs the
// forward's activations: run_backward runs the forward first in the same workspace; run_forward_saving and
// run_backward_saved are its two halves, for a caller that runs every layer's forward before any backward (a
// stack of layers). self_attn's backward uses the heads its forward left in the workspace.
//
//   forward                                  backward
//   z = dropout2(linear2(g))                 dz = dropout2(dz)   dg = dz W2   dW2 = dzᵀ g   db2 = Σ_r dz
//   g = dropout(act(f)), f = linear1(ff_in)  df = dropout(dg) ⊙ act'(f)   d ff_in = df W1   dW1 = dfᵀ ff_in
//   y = norm(x)                              dx = norm's backward (layer_ops.hpp), dweight, dbias
//   a = dropout1(self_attn(u, u, u))         du = dq + dk + dv of self_attn's backward for dropout1(da)
//   residual y = x + s                       dx and ds both get dy
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"
#include "transformer_internal.hpp"

namespace xattn {

void TransformerEncoderLayer::run_backward(const EncoderLayerPlan& plan, const float* src,
                                           const EncoderLayerMasks& masks, const float* grad_output, float* output,
                                           float* grad_src, float* grad_parameters, void* workspace) const {
    run_forward_saving(plan, src, masks, output, workspace);
    run_backward_saved(plan, src, masks, grad_output, grad_src, grad_parameters, workspace);
}

void TransformerEncoderLayer::run_forward_saving(const EncoderLayerPlan& plan, const float* src,
                                                 const EncoderLayerMasks& masks, float* output,
                                                 void* workspace) const {
    if (plan.rows == 0) return;
    Scratch w{};
    Carver carver(workspace);
    Scratch::carve(*this, plan, carver, &w);
    forward_steps(plan, src, masks, output, w);
}

void TransformerEncoderLayer::run_backward_saved(const EncoderLayerPlan& plan, const float* src,
                                                 const EncoderLayerMasks& masks, const float* grad_output,
                                                 float* grad_src, float* grad_parameters, void* workspace) const {
    const std::size_t R = plan.rows, E = config_.d_model;
    if (R == 0) {  // no output, no loss: every gradient is 0
        std::fill(grad_parameters, grad_parameters + parameter_floats(), 0.0f);
        return;
    }
    // Otherwise every parameter's gradient is written below, each by the step that makes it.
    Scratch w{};
    Carver carver(workspace);
    Scratch::carve(*this, plan, carver, &w);
    feed_forward_backward(plan, grad_output, grad_parameters, w);

    // Self-attention: da = dropout1(dh1), then self_attn's backward with query = key = value = its input, from
    // the heads its forward left in the workspace.
    std::copy(w.dh1, w.dh1 + R * E, w.da);
    if (plan.training && config_.dropout > 0.0)
        detail::dropout_in_place(plan.seed + 1, config_.dropout, w.da, R * E, plan.threads);
    const float* attn_in = config_.norm_first ? w.attn_in : src;
    float* const dq = w.grads;  // the input's gradient, u's: dq + dk + dv
    self_attn_->run_self_backward_after_forward(plan.attention, plan.attention_backward, attn_in,
                                                attention_masks(masks), w.da, dq, grad_parameters, w.mha);
    if (config_.norm_first) {  // u = norm1(x): x gets dh1 (residual) and norm1's backward of du
        std::copy(w.dh1, w.dh1 + R * E, grad_src);
        detail::layer_norm_rows_backward(src, R, E, own("norm1.weight"), config_.layer_norm_eps, dq, grad_src, true,
                                         grad_parameters + find_parameter("norm1.weight")->offset,
                                         grad_parameters + find_parameter("norm1.bias")->offset, w.norm, plan.threads);
    } else {  // h1 = x + attn(x)
        detail::add(w.dh1, dq, R * E, grad_src);
    }
}

void TransformerEncoderLayer::feed_forward_backward(const EncoderLayerPlan& plan, const float* grad_output,
                                                    float* grad_parameters, const Scratch& w) const {
    const std::size_t R = plan.rows, E = config_.d_model, F = config_.dim_feedforward;
    const double eps = config_.layer_norm_eps;
    const unsigned threads = plan.threads;
    const detail::Products products{plan.kernel_set, threads, w.linear};
    const bool drop = plan.training && config_.dropout > 0.0;
    auto dropout = [&](std::uint64_t site, float* x, std::size_t n) {
        if (drop) detail::dropout_in_place(plan.seed + site, config_.dropout, x, n, threads);
    };
    auto grad = [&](const char* name) { return grad_parameters + find_parameter(name)->offset; };
    const float* norm1_w = own("norm1.weight");
    const float* norm2_w = own("norm2.weight");

    // The gradient reaching the feed-forward's output z, and (through the residual) its input's side.
    //   post-norm: out = norm2(ff_in + z)   pre-norm: out = h1 + z
    if (config_.norm_first) {
        std::copy(grad_output, grad_output + R * E, w.dz);
        std::copy(grad_output, grad_output + R * E, w.dh1);
    } else {
        detail::layer_norm_rows_backward(w.h2, R, E, norm2_w, eps, grad_output, w.d_ff_in, false,
                                         grad("norm2.weight"), grad("norm2.bias"), w.norm, threads);
        std::copy(w.d_ff_in, w.d_ff_in + R * E, w.dz);
    }
    dropout(3, w.dz, R * E);

    // linear2: dg = dz W2 (R, F), dW2 = dzᵀ g, db2 = Σ_r dz; then dropout and the activation.
    products.input_grad(R, F, E, w.dz, own("linear2.weight"), w.dg);
    products.weight_grad(R, F, E, w.dz, w.g, grad("linear2.weight"));
    detail::column_sums(w.dz, R, E, grad("linear2.bias"), threads);
    dropout(2, w.dg, R * F);
    detail::activation_backward(config_.activation, w.f, w.dg, R * F, threads);  // dg now reaches f

    // linear1: d ff_in = df W1 (R, E), dW1 = dfᵀ ff_in, db1 = Σ_r df.
    float* d_linear1_in = config_.norm_first ? w.d_ff_in : w.da;  // post-norm: added to the residual's share below
    products.input_grad(R, E, F, w.dg, own("linear1.weight"), d_linear1_in);
    products.weight_grad(R, E, F, w.dg, w.ff_in, grad("linear1.weight"));
    detail::column_sums(w.dg, R, F, grad("linear1.bias"), threads);

    // The norm between the blocks, to the gradient reaching h1 = x + attn.
    if (config_.norm_first) {  // ff_in = norm2(h1); dh1 holds the residual's share already
        detail::layer_norm_rows_backward(w.h1, R, E, norm2_w, eps, w.d_ff_in, w.dh1, true, grad("norm2.weight"),
                                         grad("norm2.bias"), w.norm, threads);
    } else {  // ff_in = norm1(h1), which reaches the output through the residual and through linear1
        detail::add(w.d_ff_in, w.da, R * E, w.d_ff_in);
        detail::layer_norm_rows_backward(w.h1, R, E, norm1_w, eps, w.d_ff_in, w.dh1, false, grad("norm1.weight"),
                                         grad("norm1.bias"), w.norm, threads);
    }
}

namespace {

Shape shape_of(const xt::xarray<float>& a) { return Shape(a.shape().begin(), a.shape().end()); }
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

std::map<std::string, xt::xarray<float>> TransformerEncoderLayer::gradient_map(const std::vector<float>& grads) const {
    std::map<std::string, xt::xarray<float>> by_name;
    for (const ParameterInfo& p : table_) {
        xt::xarray<float> g = xt::xarray<float>::from_shape(p.shape);
        std::copy_n(grads.begin() + p.offset, g.size(), g.begin());
        by_name.emplace(p.name, std::move(g));
    }
    return by_name;
}

EncoderLayerGradients TransformerEncoderLayer::backward(const xt::xarray<float>& src,
                                                        const xt::xarray<float>& grad_output,
                                                        const EncoderLayerOptions& o) const {
    const EncoderLayerMasks masks{o.src_mask.ref(), o.src_key_padding_mask.ref()};
    EncoderLayerPlan plan;
    if (Status st = plan_backward(shape_of(src), shape_of(grad_output), masks.src_mask.kind, masks.src_mask.shape,
                                  masks.src_key_padding_mask.kind, masks.src_key_padding_mask.shape, o, &plan);
        !st.ok())
        throw std::invalid_argument(st.message());
    EncoderLayerGradients r;
    r.output = xt::xarray<float>::from_shape(plan.output_shape);
    r.grad_src = xt::xarray<float>::from_shape(plan.output_shape);
    std::vector<float> grads(parameter_floats());
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_backward(plan, src.data(), masks, grad_output.data(), r.output.data(), r.grad_src.data(), grads.data(),
                 workspace.data());
    r.grad_parameters = gradient_map(grads);
    return r;
}

bool TransformerEncoderLayer::parameters_equal(const float* parameters) const {
    const std::size_t attn = self_attn_->parameter_floats();
    return std::equal(parameters, parameters + attn, self_attn_->parameter_data(), same_bits) &&
           std::equal(parameters + attn, parameters + parameter_floats(), storage_.get(), same_bits);
}

EncoderLayerSaved TransformerEncoderLayer::forward_saving(const xt::xarray<float>& src,
                                                          const EncoderLayerOptions& o) const {
    EncoderLayerSaved s;
    s.layer_ = this;
    s.options_ = o;
    s.src_ = src;
    const EncoderLayerMasks masks{s.options_.src_mask.ref(), s.options_.src_key_padding_mask.ref()};
    // A backward plan: its workspace has room for what the backward needs, which the forward fills.
    if (Status st = plan_backward(shape_of(src), shape_of(src), masks.src_mask.kind, masks.src_mask.shape,
                                  masks.src_key_padding_mask.kind, masks.src_key_padding_mask.shape, o, &s.plan_);
        !st.ok())
        throw std::invalid_argument(st.as(Function::encoder_forward).message());
    s.output_ = xt::xarray<float>::from_shape(s.plan_.output_shape);
    s.parameters_.resize(parameter_floats());
    get_parameters(s.parameters_.data());
    s.workspace_ = kernels::allocate_workspace(s.plan_.workspace_bytes);
    run_forward_saving(s.plan_, s.src_.data(), masks, s.output_.data(), s.workspace_.data());
    return s;
}

EncoderLayerGradients TransformerEncoderLayer::backward(const EncoderLayerSaved& saved,
                                                        const xt::xarray<float>& grad_output) const {
    if (saved.layer_ != this)
        throw std::invalid_argument(Status::fail(Function::encoder_backward, Message::encoder_saved_other_layer,
                                                 {Argument::saved}).message());
    if (!parameters_equal(saved.parameters_.data()))
        throw std::invalid_argument(Status::fail(Function::encoder_backward, Message::encoder_saved_differs,
                                                 {Argument::saved, Argument::parameters}).message());
    if (shape_of(grad_output) != saved.plan_.output_shape)
        throw std::invalid_argument(Status::fail(Function::encoder_backward, Message::shape_mismatch,
                                                 {Argument::grad_output, Argument::src}, {},
                                                 {shape_of(grad_output), saved.plan_.output_shape})
                                        .message());
    const EncoderLayerMasks masks{saved.options_.src_mask.ref(), saved.options_.src_key_padding_mask.ref()};
    EncoderLayerGradients r;
    r.output = saved.output_;
    r.grad_src = xt::xarray<float>::from_shape(saved.plan_.output_shape);
    std::vector<float> grads(parameter_floats());
    // The backward writes its gradients into the workspace beside the activations: a copy keeps `saved` whole.
    // The copy starts at the same 64-byte alignment as the kept one, so the buffers carve where they were.
    std::vector<unsigned char> workspace = kernels::allocate_workspace(saved.plan_.workspace_bytes);
    Carver from(const_cast<unsigned char*>(saved.workspace_.data())), to(workspace.data());
    unsigned char* start = to.take<unsigned char>(0);
    std::copy_n(from.take<unsigned char>(0), saved.plan_.workspace_bytes - Carver::kSlack, start);
    run_backward_saved(saved.plan_, saved.src_.data(), masks, grad_output.data(), r.grad_src.data(), grads.data(),
                       start);
    r.grad_parameters = gradient_map(grads);
    return r;
}

}  // namespace xattn
