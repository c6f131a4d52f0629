// Attention backward, two ways over the same formulas (xattn/sdpa_backward.hpp):
//   fused (the fast path)  the streaming forward writes O and each row's log-sum-exp, then the fused
//                          backward kernel (kernels/attention_backward.hpp) recomputes each score tile,
//                          on the forward's micro-kernels with float32 sums;
//   backward_rows          one query row at a time: the readable baseline, and the path for a problem
//                          whose inputs hold inf or NaN (whose rules it states exactly), for zero-width
//                          problems and for heads too wide for the tiled kernels:
//                          pass 1 (forward) scores, row max, row sum → output row and log-sum-exp;
//                          pass 2 (backward) recompute P_ij = exp(s_ij − lse_i), then dV, dP, D_i, dS, dQ, dK.
// Both take their scratch from the caller's workspace; the planner sizes it for what may run, since which
// path a problem takes depends on its data.
#include "xattn/sdpa_backward.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <algorithm>
#include <array>
#include <vector>

#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"

namespace xattn {
namespace {

// Eight partial sums: independent chains the compiler keeps in SIMD registers, and a smaller rounding error.
float dot(const float* a, const float* b, std::size_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t e = 0;
    for (; e + 8 <= n; e += 8)
        for (std::size_t u = 0; u < 8; ++u) acc[u] += a[e + u] * b[e + u];
    for (; e < n; ++e) acc[0] += a[e] * b[e];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// y += a · x
void axpy(float a, const float* x, float* y, std::size_t n) {
    for (std::size_t e = 0; e < n; ++e) y[e] += a * x[e];
}

// Scratch of backward_rows: a row of scores, a row of weights, each query's log-sum-exp.
struct RowScratch {
    float* s;    // (S)
    float* p;    // (S)
    float* lse;  // (L)
    static std::uint64_t layout(const SdpaPlan& plan, void* block, RowScratch* out) {
        Carver c(block);
        RowScratch x;
        const bool any = plan.batch > 0;  // nothing is computed otherwise, and S may be huge (E = Ev = 0)
        x.s = c.take<float>(any ? plan.S : 0);
        x.p = c.take<float>(any ? plan.S : 0);
        x.lse = c.take<float>(any ? plan.L : 0);
        if (out) *out = x;
        return c.bytes();
    }
};

// Whether a problem has the dims the fused path needs (it also needs finite inputs).
bool blocked_dims(const SdpaPlan& plan) { return plan.batch > 0 && plan.L && plan.S && plan.E && plan.Ev; }

// Scratch of the fused path: the forward's workspace, the rows' log-sum-exp, a flag per problem that the
// row path takes, the backward kernel's workspace, and the row path's for those problems.
struct FusedScratch {
    void* forward;
    float* lse;            // (problems, L)
    unsigned char* skip;   // (problems): inputs not all finite
    void* backward;
    void* rows;
    static std::uint64_t layout(const SdpaPlan& plan, const kernels::KernelSet& set, void* block, FusedScratch* out) {
        Carver c(block);
        const kernels::AttentionProblem ap =
            kernels::attention_problem(plan, nullptr, nullptr, nullptr, MaskRef{}, nullptr, nullptr);
        FusedScratch x{};
        x.forward = c.take<unsigned char>(set.attention_workspace(ap));
        x.lse = c.take<float>(std::uint64_t{plan.batch} * plan.L);
        x.skip = c.take<unsigned char>(plan.batch);
        x.backward = c.take<unsigned char>(set.backward_workspace(ap));
        x.rows = c.take<unsigned char>(RowScratch::layout(plan, nullptr, nullptr));
        if (out) *out = x;
        return c.bytes();
    }
};

// The fused path runs a plan when every dim is non-zero and the heads are narrow enough for the tiles.
bool fused_plan(const SdpaPlan& plan, const kernels::KernelSet& set) {
    return blocked_dims(plan) && kernels::attention_workspace_bytes(set, plan) != sdpa_rows_workspace_bytes(plan);
}

}  // namespace

Status plan_sdpa_backward(const Shape& q, const Shape& k, const Shape& v, const Shape& grad_output,
                          MaskKind mask_kind, const Shape& mask_shape, const SdpaSettings& settings, SdpaPlan* plan) {
    SdpaPlan p;
    if (Status st = plan_sdpa(q, k, v, mask_kind, mask_shape, settings, &p); !st.ok()) return st.as(Function::sdpa_backward);
    if (grad_output != p.output_shape)
        return Status::fail(Function::sdpa_backward, Message::grad_output_shape, {Argument::grad_output}, {},
                            {grad_output, p.output_shape});
    p.workspace_bytes = fused_plan(p, *p.kernel_set) ? FusedScratch::layout(p, *p.kernel_set, nullptr, nullptr)
                                                     : RowScratch::layout(p, nullptr, nullptr);
    *plan = std::move(p);
    return {};
}

namespace {

// One query row at a time: the readable baseline, and the path for non-finite inputs (whose NaN and
// inf rules it states exactly) and for zero-width problems.
void zero_gradients(const SdpaPlan& plan, float* grad_query, float* grad_key, float* grad_value) {
    std::fill(grad_query, grad_query + plan.problems * plan.L * plan.E, 0.0f);
    std::fill(grad_key, grad_key + plan.kv_problems() * plan.S * plan.E, 0.0f);
    std::fill(grad_value, grad_value + plan.kv_problems() * plan.S * plan.Ev, 0.0f);
}

// One problem b of the row path: its rows, and what the two passes share.
struct RowProblem {
    const SdpaPlan& plan;
    const MaskRef& mask;
    std::size_t b;
    const float* Q;   // (L, E)
    const float* K;   // (S, E)
    const float* V;   // (S, Ev)
    const float* dO;  // (L, Ev)
    float* O;         // (L, Ev)
    float* dQ;        // (L, E)
    float* dK;        // (S, E), shared by the query heads of a GQA group
    float* dV;        // (S, Ev)
    float* W;         // (L, S) or null
    float keep_scale;
    static constexpr float kNegInf = -std::numeric_limits<float>::infinity();

    // Scaled, masked scores of row i (steps 1 and 2) into s (S), as the forward computes them.
    void scores(std::size_t i, float* s) const {
        const std::size_t mask_row = plan.mask_kind == MaskKind::none ? 0 : plan.mask_row_offset(b, i);
        for (std::size_t j = 0; j < plan.S; ++j) {
            float x = kNegInf;
            if (plan.causal_visible(i, j))
                x = plan.apply_mask(dot(Q + i * plan.E, K + j * plan.E, plan.E) * plan.scale, mask,
                                    mask_row + j * plan.mask_col_stride());
            s[j] = x;
        }
    }
    // The dropout multiplier of weight (i, j): 1/(1 - p) kept, 0 dropped.
    float multiplier(std::size_t i, std::size_t j) const {
        const bool kept = plan.dropout_p <= 0.0 || dropout_keeps(plan.seed, plan.dropout_p, (b * plan.L + i) * plan.S + j);
        return kept ? keep_scale : 0.0f;
    }

    // Pass 1, the forward of row i: its output row and log-sum-exp (−inf for a fully masked row).
    float forward_row(std::size_t i, float* s) const {
        const std::size_t S = plan.S, Ev = plan.Ev;
        scores(i, s);
        float m = kNegInf;
        bool any_nan = false;
        for (std::size_t j = 0; j < S; ++j) {
            if (s[j] > m) m = s[j];
            any_nan |= s[j] != s[j];
        }
        float* o = O + i * Ev;
        std::fill(o, o + Ev, 0.0f);
        if (m == kNegInf && !any_nan) return kNegInf;
        float sum = 0.0f;
        for (std::size_t j = 0; j < S; ++j) sum += std::exp(s[j] - m);
        const float lse = m + std::log(sum);
        for (std::size_t j = 0; j < S; ++j) {
            const float pj = std::exp(s[j] - lse) * multiplier(i, j);
            if (pj != 0.0f) axpy(pj, V + j * Ev, o, Ev);
        }
        return lse;
    }

    // Pass 2, the backward of row i, recomputing P from the scores and the saved log-sum-exp (`weights`, when
    // given, receive P after dropout, as the forward returns them).
    void backward_row(std::size_t i, float lse, float* s, float* p) const {
        const std::size_t S = plan.S, E = plan.E, Ev = plan.Ev;
        float* dq = dQ + i * E;
        std::fill(dq, dq + E, 0.0f);
        if (W) std::fill(W + i * S, W + (i + 1) * S, 0.0f);
        if (lse == kNegInf) return;  // a fully masked row passes no gradient and has no weights
        scores(i, s);
        const float* dout = dO + i * Ev;
        float D = 0.0f;  // D_i = Σ_j P_ij dP_ij
        for (std::size_t j = 0; j < S; ++j) {
            const float pj = std::exp(s[j] - lse);
            p[j] = pj;
            const float mult = multiplier(i, j);
            if (W) W[i * S + j] = pj * mult;
            float dp = 0.0f;
            if (pj * mult != 0.0f) {
                axpy(pj * mult, dout, dV + j * Ev, Ev);  // dV_j += Pd_ij · dO_i
                dp = dot(dout, V + j * Ev, Ev) * mult;   // dP_ij
            }
            s[j] = dp;  // s now holds dP for this row
            D += pj * dp;
        }
        for (std::size_t j = 0; j < S; ++j) {
            if (p[j] == 0.0f) continue;
            const float ds = p[j] * (s[j] - D) * plan.scale;  // scale · dS_ij
            axpy(ds, K + j * E, dq, E);                       // dQ_i += scale · dS_ij K_j
            axpy(ds, Q + i * E, dK + j * E, E);               // dK_j += scale · dS_ij Q_i
        }
    }
};

// Problems [b_begin, b_end) one query row at a time; the gradients must start at 0 (dK and dV of a GQA
// group are added to). `weights` (or null) receives each row's P after dropout, as the forward returns them.
void backward_rows(const SdpaPlan& plan, std::size_t b_begin, std::size_t b_end, const float* query,
                   const float* key, const float* value, const MaskRef& mask, const float* grad_output,
                   float* output, float* grad_query, float* grad_key, float* grad_value, float* weights,
                   void* workspace) {
    const std::size_t L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    if (plan.batch == 0) return;  // an empty output means a zero loss; and S may be huge when E = Ev = 0
    RowScratch scratch{};
    RowScratch::layout(plan, workspace, &scratch);
    const float keep_scale = plan.dropout_p > 0.0 ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    for (std::size_t b = b_begin; b < b_end; ++b) {
        const std::size_t kv = plan.kv_index(b);
        const RowProblem row{plan, mask, b, query + b * L * E, key + kv * S * E, value + kv * S * Ev,
                             grad_output + b * L * Ev, output + b * L * Ev, grad_query + b * L * E,
                             grad_key + kv * S * E, grad_value + kv * S * Ev, weights ? weights + b * L * S : nullptr,
                             keep_scale};
        for (std::size_t i = 0; i < L; ++i) scratch.lse[i] = row.forward_row(i, scratch.s);
        for (std::size_t i = 0; i < L; ++i) row.backward_row(i, scratch.lse[i], scratch.s, scratch.p);
    }
}

bool all_finite(const float* x, std::size_t n) {
    for (std::size_t e = 0; e < n; ++e)
        if (!std::isfinite(x[e])) return false;
    return true;
}

// The fast path: the streaming forward (O, lse) for every problem, then the fused backward kernel for
// the problems whose inputs are all finite; the others take the row path, alone.
// With `weights`, the forward is the materialising one, which writes them beside O and lse.
void backward_fused(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                    const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                    float* grad_key, float* grad_value, float* weights, void* workspace) {
    const kernels::KernelSet& set = *plan.kernel_set;
    FusedScratch w{};
    FusedScratch::layout(plan, set, workspace, &w);
    const std::size_t L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    kernels::AttentionProblem ap = kernels::attention_problem(plan, query, key, value, mask, output, weights);
    ap.lse = w.lse;
    set.attention(ap, w.forward);
    for (std::size_t b = 0; b < plan.batch; ++b) {
        const std::size_t kv = plan.kv_index(b);
        w.skip[b] = !(all_finite(query + b * L * E, L * E) && all_finite(key + kv * S * E, S * E) &&
                      all_finite(value + kv * S * Ev, S * Ev) && all_finite(grad_output + b * L * Ev, L * Ev));
    }
    ap.grad_output = grad_output;
    ap.grad_query = grad_query, ap.grad_key = grad_key, ap.grad_value = grad_value;
    ap.skip = w.skip;
    ap.weights = nullptr;
    set.backward(ap, w.backward);
    for (std::size_t b = 0; b < plan.batch; ++b)
        if (w.skip[b])
            backward_rows(plan, b, b + 1, query, key, value, mask, grad_output, output, grad_query, grad_key,
                          grad_value, nullptr, w.rows);  // the forward above wrote these problems' weights
}

}  // namespace

void run_sdpa_backward(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                       const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                       float* grad_key, float* grad_value, float* weights, void* workspace) {
    zero_gradients(plan, grad_query, grad_key, grad_value);
    if (!plan.need_weights) weights = nullptr;
    if (weights && plan.batch == 0) std::fill(weights, weights + numel(plan.weights_shape), 0.0f);
    if (fused_plan(plan, *plan.kernel_set))
        backward_fused(plan, query, key, value, mask, grad_output, output, grad_query, grad_key, grad_value, weights,
                       workspace);
    else
        backward_rows(plan, 0, plan.batch, query, key, value, mask, grad_output, output, grad_query, grad_key,
                      grad_value, weights, workspace);
}

void run_sdpa_backward(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                       const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                       float* grad_key, float* grad_value, float* weights) {
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_sdpa_backward(plan, query, key, value, mask, grad_output, output, grad_query, grad_key, grad_value, weights,
                      workspace.data());
}

GradientResult scaled_dot_product_attention_backward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                                     const xt::xarray<float>& value,
                                                     const xt::xarray<float>& grad_output,
                                                     const SdpaOptions& options) {
    const Shape q(query.shape().begin(), query.shape().end());
    const Shape k(key.shape().begin(), key.shape().end());
    const Shape v(value.shape().begin(), value.shape().end());
    const Shape g(grad_output.shape().begin(), grad_output.shape().end());
    const MaskRef mask = options.attn_mask.ref();
    SdpaPlan plan;
    if (Status st = plan_sdpa_backward(q, k, v, g, mask.kind, mask.shape, settings_of(options), &plan); !st.ok())
        throw std::invalid_argument(st.message());
    GradientResult r;
    r.output = xt::xarray<float>::from_shape(plan.output_shape);
    r.grad_query = xt::xarray<float>::from_shape(q);
    r.grad_key = xt::xarray<float>::from_shape(k);
    r.grad_value = xt::xarray<float>::from_shape(v);
    r.weights = xt::xarray<float>::from_shape(plan.need_weights ? plan.weights_shape : Shape{0});
    run_sdpa_backward(plan, query.data(), key.data(), value.data(), mask, grad_output.data(), r.output.data(),
                      r.grad_query.data(), r.grad_key.data(), r.grad_value.data(),
                      plan.need_weights ? r.weights.data() : nullptr);
    return r;
}

}  // namespace xattn
