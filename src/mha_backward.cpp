// torch.nn.MultiheadAttention's backward: the gradients of Σ grad_output ⊙ output with respect to the
// inputs and every parameter, through the same steps as the forward (mha.cpp), in reverse:
//
//   forward                                    backward (rows r of an input, in its own order)
//   Qp = Xq Wqᵀ + bq   (and K, V likewise)     dXq = dQp Wq     dWq = dQpᵀ Xq     dbq = Σ_r dQp
//   heads: Qp (L·N, E) -> qh (N, H, L, hd)     dQp gathered back from dqh
//   attn = SDPA(qh, kh, vh)                     dqh, dkh, dvh = SDPA backward(dattn)   (sdpa_backward.cpp)
//   merged = heads of attn side by side         dattn = heads of dmerged
//   out = merged Woᵀ + bo                       dmerged = dOut Wo   dWo = dOutᵀ merged   dbo = Σ_r dOut
//
// bias_k and bias_v get the gradient of the key and value they append (summed over the batch); the zero
// key of add_zero_attn has none. Every product runs on the linear kernel, which computes Y = X Wᵀ: a product
// by W reads W as the kernel's (in, out) operand, and a weight gradient dYᵀ X reads dY down its columns and X as
// the (in, out) operand, so no operand is copied.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"
#include "xattn/mha.hpp"
#include "xattn/sdpa_backward.hpp"

#include "layer_ops.hpp"

#include "mha_internal.hpp"

namespace xattn {
namespace {

// The products of a projection Y (rows, out) = X (rows, in) · Wᵀ, W stored (out, in), everything contiguous,
// as the linear kernel's problems (it computes Y = X Wᵀ, or X W with w_transposed):
// dX (rows, in) = dY (rows, out) · W: K = out, W read as stored, (K, N).
kernels::LinearProblem input_grad_problem(unsigned threads, std::size_t rows, std::size_t in, std::size_t out) {
    kernels::LinearProblem p;
    p.rows = rows, p.in = out, p.out = in, p.x_stride = out, p.y_stride = in;
    p.w_transposed = true;
    p.threads = threads;
    return p;
}

// dW (out, in) = dYᵀ · X: dY read down its columns (K = rows), X read as stored, (K, N).
kernels::LinearProblem weight_grad_problem(unsigned threads, std::size_t rows, std::size_t in, std::size_t out) {
    kernels::LinearProblem p;
    p.rows = out, p.in = rows, p.out = in, p.x_stride = 1, p.x_k_stride = out, p.y_stride = in;
    p.w_transposed = true;
    p.threads = threads;
    return p;
}

}  // namespace

// The backward's own buffers, carved after the forward's (Scratch) from the same workspace.
struct MultiheadAttention::BackwardScratch {
    float* dmerged;  // (L·N, E)            dOut Wo, in the query's row order
    float* dattn;    // (N, H, L, hd)       dmerged split into heads
    float* dqh;      // (N, H, L, hd)
    float* dkh;      // (N, H, S_total, hd)
    float* dvh;      // (N, H, S_total, hd)
    float* drows;    // (max(L, S)·N, E)    one input's projection gradient, in its row order; (L·N, 3E) when
                     //                     self_packed: the three side by side
    void* linear;    // the linear kernel's scratch, for the largest of these products

    template <class Carver>
    static void carve(const MultiheadAttention& m, const MhaPlan& plan, Carver& c, BackwardScratch* out) {
        const std::uint64_t E = m.config_.embed_dim, N = plan.N, L = plan.L, St = plan.S_total;
        const std::uint64_t rows = std::max(plan.query_rows, plan.key_rows);
        BackwardScratch x;
        x.dmerged = c.template take<float>(L * N * E);
        x.dattn = c.template take<float>(N * L * E);
        x.dqh = c.template take<float>(N * L * E);
        x.dkh = c.template take<float>(N * St * E);
        x.dvh = c.template take<float>(N * St * E);
        x.drows = c.template take<float>(rows * E * (m.self_packed(plan) ? 3 : 1));
        // Every product below: the out-projection's and each input's dX = dY·W and dW = dYᵀ·X.
        std::uint64_t linear = 0;
        const kernels::KernelSet& set = *plan.attention.kernel_set;
        const unsigned threads = plan.attention.threads;
        for (const auto& [in_rows, in_dim] : {std::pair{plan.query_rows, m.config_.embed_dim},
                                              std::pair{plan.key_rows, m.kdim()}, std::pair{plan.key_rows, m.vdim()}})
            linear = std::max({linear,
                               kernels::linear_workspace_bytes(set, input_grad_problem(threads, in_rows, in_dim, E)),
                               kernels::linear_workspace_bytes(set, weight_grad_problem(threads, in_rows, in_dim, E))});
        if (m.self_packed(plan)) {  // the three inputs' products as one, (rows, 3E)
            const std::size_t R = plan.query_rows, E3 = 3 * m.config_.embed_dim;
            linear = std::max({linear, kernels::linear_workspace_bytes(set, input_grad_problem(threads, R, E, E3)),
                               kernels::linear_workspace_bytes(set, weight_grad_problem(threads, R, E, E3))});
        }
        x.linear = c.template take<unsigned char>(linear);
        if (out) *out = x;
    }
};

std::uint64_t MultiheadAttention::backward_workspace(const MultiheadAttention& m, const MhaPlan& plan) {
    Carver c(nullptr);
    Scratch::carve(m, plan, c, nullptr);
    BackwardScratch::carve(m, plan, c, nullptr);
    return c.bytes();
}

Status MultiheadAttention::plan_backward(const Shape& q, const Shape& k, const Shape& v, const Shape& grad_output,
                                         MaskKind kpm_kind, const Shape& kpm, MaskKind attn_kind, const Shape& am,
                                         const MhaSettings& settings, MhaPlan* plan) const {
    MhaPlan p;
    if (Status st = plan_call(q, k, v, kpm_kind, kpm, attn_kind, am, settings, true, &p); !st.ok()) return st;
    if (grad_output != p.output_shape)
        return Status::fail(Function::mha_backward, Message::mha_grad_output_shape, {Argument::grad_output}, {},
                            {grad_output, p.output_shape});
    *plan = std::move(p);
    return {};
}

namespace {

struct Products {
    const kernels::KernelSet& set;
    void* workspace;
    unsigned threads;  // the plan's
    // dX (rows, in) = dY (rows, out) · W, W stored (out, in).
    void input_grad(std::size_t rows, std::size_t in, std::size_t out, const float* dy, const float* w,
                    float* dx) const {
        kernels::LinearProblem p = input_grad_problem(threads, rows, in, out);
        p.x = dy, p.w = w, p.y = dx;
        kernels::run_linear(set, p, workspace);
    }
    // dW (out, in) = dYᵀ · X, dY (rows, out), X (rows, in).
    void weight_grad(std::size_t rows, std::size_t in, std::size_t out, const float* dy, const float* x,
                     float* dw) const {
        kernels::LinearProblem p = weight_grad_problem(threads, rows, in, out);
        p.x = dy, p.w = x, p.y = dw;
        kernels::run_linear(set, p, workspace);
    }
};

}  // namespace

bool MultiheadAttention::clear_gradients(const MhaPlan& plan, float* output, float* grad_query, float* grad_key,
                                         float* grad_value, float* grad_parameters) const {
    // Every gradient starts at 0: an empty batch or sequence contributes nothing (and leaves no garbage).
    const std::size_t E = config_.embed_dim;
    if (output) std::fill(output, output + plan.query_rows * E, 0.0f);
    std::fill(grad_query, grad_query + plan.query_rows * E, 0.0f);
    if (grad_key) std::fill(grad_key, grad_key + plan.key_rows * kdim(), 0.0f);
    if (grad_value) std::fill(grad_value, grad_value + plan.key_rows * vdim(), 0.0f);
    std::fill(grad_parameters, grad_parameters + parameter_floats(), 0.0f);
    return plan.query_rows != 0;  // no output, no loss: every gradient is 0
}

void MultiheadAttention::carve_backward(const MhaPlan& plan, void* workspace, Scratch* w, BackwardScratch* b) const {
    Carver carver(workspace);
    Scratch::carve(*this, plan, carver, w);
    BackwardScratch::carve(*this, plan, carver, b);
}

void MultiheadAttention::run_backward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                                      const MhaMasks& masks, const float* grad_output, float* output,
                                      float* grad_query, float* grad_key, float* grad_value, float* grad_parameters,
                                      void* workspace) const {
    if (!clear_gradients(plan, output, grad_query, grad_key, grad_value, grad_parameters)) return;
    Scratch w{};
    BackwardScratch b{};
    carve_backward(plan, workspace, &w, &b);
    // The forward's first steps: projected heads and the mask.
    project_heads(plan, query, key, value, w);
    if (plan.mask.kind != MaskKind::none) build_mask(plan, masks, w.mask);
    backward_from_heads(plan, query, key, value, grad_output, output, grad_query, grad_key, grad_value,
                        grad_parameters, false, false, w, b);
}

namespace {

// Whether the heads, the mask and the merged heads that run_forward(forward_plan, …) left in `workspace` are
// where `plan`'s backward looks: both plans carve them first, from the same shapes.
template <class Scratch>
bool heads_kept(const Scratch& f, const Scratch& w) {
    return f.qh == w.qh && f.kh == w.kh && f.vh == w.vh && f.mask == w.mask && f.merged == w.merged;
}

// Whether the heads a forward planned as `forward_plan` left in the workspace are where the backward's scratch `w`
// reads them; should the layouts ever differ, `project` projects them again.
template <class Scratch, class Project>
bool heads_from_forward(const MultiheadAttention& m, const MhaPlan& forward_plan, void* workspace, const Scratch& w,
                        const Project& project) {
    Scratch f{};
    Carver forward_carver(workspace);
    Scratch::carve(m, forward_plan, forward_carver, &f);
    const bool kept = heads_kept(f, w);
    if (!kept) project();
    return kept;
}

}  // namespace

void MultiheadAttention::run_backward_after_forward(const MhaPlan& forward_plan, const MhaPlan& plan,
                                                    const float* query, const float* key, const float* value,
                                                    const MhaMasks& masks, const float* grad_output, float* output,
                                                    float* grad_query, float* grad_key, float* grad_value,
                                                    float* grad_parameters, void* workspace) const {
    if (!clear_gradients(plan, output, grad_query, grad_key, grad_value, grad_parameters)) return;
    Scratch w{};
    BackwardScratch b{};
    carve_backward(plan, workspace, &w, &b);
    const bool kept = heads_from_forward(*this, forward_plan, workspace, w, [&] {
        project_heads(plan, query, key, value, w);
        if (plan.mask.kind != MaskKind::none) build_mask(plan, masks, w.mask);
    });
    backward_from_heads(plan, query, key, value, grad_output, output, grad_query, grad_key, grad_value,
                        grad_parameters, kept, false, w, b);
}

void MultiheadAttention::run_self_backward_after_forward(const MhaPlan& forward_plan, const MhaPlan& plan,
                                                         const float* x, const MhaMasks& masks,
                                                         const float* grad_output, float* grad_x,
                                                         float* grad_parameters, void* workspace) const {
    if (!self_packed(plan)) {  // three gradients, summed here
        float* const dk = grad_x + plan.query_rows * config_.embed_dim;  // the layer's room for three
        float* const dv = dk + plan.query_rows * config_.embed_dim;
        run_backward_after_forward(forward_plan, plan, x, x, x, masks, grad_output, nullptr, grad_x, dk, dv,
                                   grad_parameters, workspace);
        for (std::size_t i = 0, n = plan.query_rows * config_.embed_dim; i < n; ++i) grad_x[i] += dk[i] + dv[i];
        return;
    }
    if (!clear_gradients(plan, nullptr, grad_x, nullptr, nullptr, grad_parameters)) return;
    Scratch w{};
    BackwardScratch b{};
    carve_backward(plan, workspace, &w, &b);
    const bool kept = heads_from_forward(*this, forward_plan, workspace, w, [&] {
        project_heads(plan, x, x, x, w);
        if (plan.mask.kind != MaskKind::none) build_mask(plan, masks, w.mask);
    });
    backward_from_heads(plan, x, x, x, grad_output, nullptr, grad_x, nullptr, nullptr, grad_parameters, kept, true,
                        w, b);
}

void MultiheadAttention::backward_from_heads(const MhaPlan& plan, const float* query, const float* key,
                                             const float* value, const float* grad_output, float* output,
                                             float* grad_query, float* grad_key, float* grad_value,
                                             float* grad_parameters, bool merged_ready, bool self_sum,
                                             const Scratch& w, const BackwardScratch& b) const {
    const std::size_t E = config_.embed_dim, H = config_.num_heads, hd = E / H;
    const std::size_t L = plan.L, Rq = plan.query_rows;
    const Products products{*plan.attention.kernel_set, b.linear, plan.attention.threads};
    const detail::RowOrder query_order{config_.batch_first && plan.batched, plan.N, L};
    auto grad_of = [&](const ParamSpan& p) { return grad_parameters + (p.data() - storage_.get()); };

    // dmerged = dOut Wo, split into heads.   (L·N, E) · (E, E) -> (L·N, E) -> dattn (N, H, L, hd)
    products.input_grad(Rq, E, E, grad_output, out_weight_.data(), b.dmerged);
    for (std::size_t r = 0; r < Rq; ++r)
        for (std::size_t h = 0; h < H; ++h)
            std::copy_n(b.dmerged + r * E + h * hd, hd,
                        b.dattn + ((query_order.n(r) * H + h) * L + query_order.t(r)) * hd);

    // The heads' attention and its gradients (the forward output comes with them).
    run_sdpa_backward(plan.attention, w.qh, w.kh, w.vh, mask_view(plan, w.mask), b.dattn, w.attn, b.dqh, b.dkh,
                      b.dvh, nullptr, w.attention);
    if (output) project_out(plan, w.attn, w.merged, output, w);
    else if (!merged_ready) merge_heads(plan, w.attn, w.merged);

    // Out-projection: dWo = dOutᵀ merged (E, E), dbo = Σ_r dOut.
    products.weight_grad(Rq, E, E, grad_output, w.merged, grad_of(out_weight_));
    if (config_.bias) detail::column_sums(grad_output, Rq, E, grad_of(out_bias_), plan.attention.threads);

    if (self_sum)
        self_in_projection_backward(plan, query, grad_query, grad_parameters, b);
    else
        in_projection_backward(plan, query, key, value, grad_query, grad_key, grad_value, grad_parameters, b);

    // bias_k and bias_v: the gradient of the key and value appended at position S, summed over the batch.
    if (config_.add_bias_kv)
        for (std::size_t n = 0; n < plan.N; ++n)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t d = 0; d < hd; ++d) {
                    grad_of(bias_k_)[h * hd + d] += b.dkh[((n * H + h) * plan.S_total + plan.S) * hd + d];
                    grad_of(bias_v_)[h * hd + d] += b.dvh[((n * H + h) * plan.S_total + plan.S) * hd + d];
                }
}

void MultiheadAttention::in_projection_backward(const MhaPlan& plan, const float* query, const float* key,
                                                const float* value, float* grad_query, float* grad_key,
                                                float* grad_value, float* grad_parameters,
                                                const BackwardScratch& b) const {
    // One input at a time: gather its rows' gradient from the heads, then
    // dX = dP W (rows, in), dW = dPᵀ X (E, in), db = Σ_r dP.
    const std::size_t E = config_.embed_dim, H = config_.num_heads, hd = E / H;
    const Products products{*plan.attention.kernel_set, b.linear, plan.attention.threads};
    const detail::RowOrder query_order{config_.batch_first && plan.batched, plan.N, plan.L};
    const detail::RowOrder key_order{config_.batch_first && plan.batched, plan.N, plan.S};
    auto grad_of = [&](const ParamSpan& p) { return grad_parameters + (p.data() - storage_.get()); };
    struct Input {
        const float* dh;        // (N, H, T, hd) the heads' gradient
        std::size_t T;          // positions per head in dh: L, or S_total for keys and values
        const detail::RowOrder& order;  // of the input's rows
        std::size_t rows, in;
        const float* x;
        const ParamSpan& weight;
        float* grad_x;
        std::size_t bias_at;    // this input's part of in_proj_bias
    };
    const std::size_t Rq = plan.query_rows, Rk = plan.key_rows, St = plan.S_total;
    for (const Input& in : {Input{b.dqh, plan.L, query_order, Rq, E, query, q_weight_, grad_query, 0},
                            Input{b.dkh, St, key_order, Rk, kdim(), key, k_weight_, grad_key, E},
                            Input{b.dvh, St, key_order, Rk, vdim(), value, v_weight_, grad_value, 2 * E}}) {
        for (std::size_t r = 0; r < in.rows; ++r)
            for (std::size_t h = 0; h < H; ++h)
                std::copy_n(in.dh + ((in.order.n(r) * H + h) * in.T + in.order.t(r)) * hd, hd, b.drows + r * E + h * hd);
        products.input_grad(in.rows, in.in, E, b.drows, in.weight.data(), in.grad_x);  // (rows, E) · (E, in)
        products.weight_grad(in.rows, in.in, E, b.drows, in.x, grad_of(in.weight));     // (E, rows) · (rows, in)
        if (config_.bias)
            detail::column_sums(b.drows, in.rows, E, grad_of(in_bias_) + in.bias_at, plan.attention.threads);
    }
}

void MultiheadAttention::self_in_projection_backward(const MhaPlan& plan, const float* x, float* grad_x,
                                                     float* grad_parameters, const BackwardScratch& b) const {
    // The three inputs' projection gradients side by side, dP = [dQp dKp dVp] (rows, 3E), against the packed
    // in_proj_weight W (3E, E): dX = dP W (rows, E) is the sum of the three inputs' gradients, dW = dPᵀ X (3E, E)
    // and db = Σ_r dP each input's own, as three products would give them.
    const std::size_t E = config_.embed_dim, H = config_.num_heads, hd = E / H, R = plan.query_rows, L = plan.L;
    const Products products{*plan.attention.kernel_set, b.linear, plan.attention.threads};
    const detail::RowOrder order{config_.batch_first && plan.batched, plan.N, L};
    auto grad_of = [&](const ParamSpan& p) { return grad_parameters + (p.data() - storage_.get()); };
    const float* heads[3] = {b.dqh, b.dkh, b.dvh};  // (N, H, L, hd) each (S_total = L)
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t j = 0; j < 3; ++j)
            for (std::size_t h = 0; h < H; ++h)
                std::copy_n(heads[j] + ((order.n(r) * H + h) * L + order.t(r)) * hd, hd,
                            b.drows + r * 3 * E + j * E + h * hd);
    products.input_grad(R, E, 3 * E, b.drows, q_weight_.data(), grad_x);  // (rows, 3E) · (3E, E)
    products.weight_grad(R, E, 3 * E, b.drows, x, grad_of(q_weight_));     // (3E, rows) · (rows, E)
    if (config_.bias) detail::column_sums(b.drows, R, 3 * E, grad_of(in_bias_), plan.attention.threads);
}

MhaGradientResult MultiheadAttention::backward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                               const xt::xarray<float>& value, const xt::xarray<float>& grad_output,
                                               const MhaForwardOptions& o) const {
    const Shape q(query.shape().begin(), query.shape().end());
    const Shape k(key.shape().begin(), key.shape().end());
    const Shape v(value.shape().begin(), value.shape().end());
    const Shape g(grad_output.shape().begin(), grad_output.shape().end());
    const MhaMasks masks{o.key_padding_mask.ref(), o.attn_mask.ref()};
    MhaPlan plan;
    if (Status st = plan_backward(q, k, v, g, masks.key_padding_mask.kind, masks.key_padding_mask.shape,
                                  masks.attn_mask.kind, masks.attn_mask.shape, o, &plan);
        !st.ok())
        throw std::invalid_argument(st.message());
    MhaGradientResult r;
    r.output = xt::xarray<float>::from_shape(q);
    r.grad_query = xt::xarray<float>::from_shape(q);
    r.grad_key = xt::xarray<float>::from_shape(k);
    r.grad_value = xt::xarray<float>::from_shape(v);
    std::vector<float> grads(parameter_floats());
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_backward(plan, query.data(), key.data(), value.data(), masks, grad_output.data(), r.output.data(),
                 r.grad_query.data(), r.grad_key.data(), r.grad_value.data(), grads.data(), workspace.data());
    for (const ParameterInfo& p : parameters()) {
        xt::xarray<float> grad = xt::xarray<float>::from_shape(p.shape);
        std::copy_n(grads.begin() + p.offset, grad.size(), grad.begin());
        r.grad_parameters.emplace(p.name, std::move(grad));
    }
    return r;
}

}  // namespace xattn
