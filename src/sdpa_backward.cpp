// Attention backward, two ways over the same formulas (xattn/sdpa_backward.hpp):
//   backward_blocked  blocks of 64 query rows, every product on the SIMD linear kernel: the fast path;
//   backward_rows     one query row at a time, the readable baseline and the path for non-finite inputs:
//                     pass 1 (forward) scores, row max, row sum → output row and the row's log-sum-exp;
//                     pass 2 (backward) recompute P_ij = exp(s_ij − lse_i), then dV, dP, D_i, dS, dQ, dK.
// Both take their scratch from the caller's workspace; the planner sizes it for the larger of the two,
// since which one runs depends on the data (finite or not).
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

// Whether backward_blocked can run a problem of these dims (it also needs finite inputs).
bool blocked_dims(const SdpaPlan& plan) { return plan.batch > 0 && plan.L && plan.S && plan.E && plan.Ev; }

// Scratch of backward_blocked: O(block · S + S · (E + Ev)), never (L, S) for the whole problem.
struct BlockScratch {
    static constexpr std::size_t kRows = 64;  // query rows per block
    float *Kt, *Vt;            // (E, S), (Ev, S)
    float *P, *Pd, *dP;        // (Lb, S) each
    float *Pdt, *dSt;          // (S, Lb) each
    float *Qt, *dOt;           // (E, Lb), (Ev, Lb)
    float *partK, *partV;      // (S, E), (S, Ev): one block's dK, dV
    void* linear;              // the linear kernel's scratch, for the largest of the products below
    static std::uint64_t layout(const SdpaPlan& plan, const kernels::KernelSet& set, void* block, BlockScratch* out) {
        if (!blocked_dims(plan)) return 0;
        // 64-bit counts: Lb · S can pass 4 G where size_t is 32-bit.
        const std::uint64_t S = plan.S, E = plan.E, Ev = plan.Ev, Lb = std::min(plan.L, kRows);
        Carver c(block);
        BlockScratch x;
        x.Kt = c.take<float>(E * S), x.Vt = c.take<float>(Ev * S);
        x.P = c.take<float>(Lb * S), x.Pd = c.take<float>(Lb * S), x.dP = c.take<float>(Lb * S);
        x.Pdt = c.take<float>(S * Lb), x.dSt = c.take<float>(S * Lb);
        x.Qt = c.take<float>(E * Lb), x.dOt = c.take<float>(Ev * Lb);
        x.partK = c.take<float>(S * E), x.partV = c.take<float>(S * Ev);
        std::uint64_t linear = 0;
        for (const auto& [rows, in, outs] : {std::array<std::uint64_t, 3>{Lb, E, S}, {Lb, S, Ev}, {Lb, Ev, S}, {Lb, S, E},
                                             {S, Lb, E}, {S, Lb, Ev}}) {
            kernels::LinearProblem p;
            p.rows = static_cast<std::size_t>(rows), p.in = static_cast<std::size_t>(in), p.out = static_cast<std::size_t>(outs);
            linear = std::max(linear, kernels::linear_workspace_bytes(set, p));
        }
        x.linear = c.take<unsigned char>(linear);
        if (out) *out = x;
        return c.bytes();
    }
};

}  // namespace

Status plan_sdpa_backward(const Shape& q, const Shape& k, const Shape& v, const Shape& grad_output,
                          MaskKind mask_kind, const Shape& mask_shape, const SdpaSettings& settings, SdpaPlan* plan) {
    SdpaSettings s = settings;
    s.need_weights = false;
    SdpaPlan p;
    if (Status st = plan_sdpa(q, k, v, mask_kind, mask_shape, s, &p); !st.ok()) return st;
    if (grad_output != p.output_shape)
        return Status::fail("scaled_dot_product_attention_backward: grad_output shape " + shape_to_string(grad_output) +
                            " != output shape " + shape_to_string(p.output_shape) + " (…, L, Ev)");
    p.workspace_bytes = std::max(RowScratch::layout(p, nullptr, nullptr),
                                 BlockScratch::layout(p, *p.kernel_set, nullptr, nullptr));
    *plan = std::move(p);
    return {};
}

namespace {

// One query row at a time: the readable baseline, and the path for non-finite inputs (whose NaN and
// inf rules it states exactly) and for zero-width problems.
void backward_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                   const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                   float* grad_key, float* grad_value, void* workspace) {
    const std::size_t L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t mask_step = plan.mask_col_stride();
    const float keep_scale = plan.dropout_p > 0.0 ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    // An empty output means a zero loss: every gradient is 0, and plan.batch is 0 (nothing to loop over).
    std::fill(grad_query, grad_query + plan.problems * L * E, 0.0f);
    std::fill(grad_key, grad_key + plan.kv_problems() * S * E, 0.0f);
    std::fill(grad_value, grad_value + plan.kv_problems() * S * Ev, 0.0f);
    if (plan.batch == 0) return;  // and S may be huge when E = Ev = 0
    RowScratch scratch{};
    RowScratch::layout(plan, workspace, &scratch);
    float* s = scratch.s;      // (S) this row's scores, then its dP
    float* p = scratch.p;      // (S) this row's weights
    float* lse = scratch.lse;  // (L) each row's log-sum-exp

    // Scaled, masked scores of row i (steps 1 and 2), as the forward computes them.
    auto scores = [&](std::size_t b, std::size_t i, const float* Qb, const float* Kb) {
        const std::size_t mask_row = plan.mask_kind == MaskKind::none ? 0 : plan.mask_row_offset(b, i);
        for (std::size_t j = 0; j < S; ++j) {
            float x = neg_inf;
            if (plan.causal_visible(i, j))
                x = plan.apply_mask(dot(Qb + i * E, Kb + j * E, E) * plan.scale, mask, mask_row + j * mask_step);
            s[j] = x;
        }
    };
    auto keep = [&](std::size_t b, std::size_t i, std::size_t j) {
        return plan.dropout_p <= 0.0 || dropout_keeps(plan.seed, plan.dropout_p, (b * L + i) * S + j);
    };

    for (std::size_t b = 0; b < plan.batch; ++b) {
        const std::size_t kv = plan.kv_index(b);
        const float* Qb = query + b * L * E;        // (L, E)
        const float* Kb = key + kv * S * E;         // (S, E)
        const float* Vb = value + kv * S * Ev;      // (S, Ev)
        const float* dOb = grad_output + b * L * Ev;  // (L, Ev)
        float* Ob = output + b * L * Ev;            // (L, Ev)
        float* dQb = grad_query + b * L * E;        // (L, E)
        float* dKb = grad_key + kv * S * E;         // (S, E), shared by the query heads of a GQA group
        float* dVb = grad_value + kv * S * Ev;      // (S, Ev)

        // Pass 1, the forward: output rows and each row's log-sum-exp (−inf for a fully masked row).
        for (std::size_t i = 0; i < L; ++i) {
            scores(b, i, Qb, Kb);
            float m = neg_inf;
            bool any_nan = false;
            for (std::size_t j = 0; j < S; ++j) {
                if (s[j] > m) m = s[j];
                any_nan |= s[j] != s[j];
            }
            float* o = Ob + i * Ev;
            std::fill(o, o + Ev, 0.0f);
            if (m == neg_inf && !any_nan) {
                lse[i] = neg_inf;
                continue;
            }
            float sum = 0.0f;
            for (std::size_t j = 0; j < S; ++j) sum += std::exp(s[j] - m);
            lse[i] = m + std::log(sum);
            for (std::size_t j = 0; j < S; ++j) {
                const float pj = std::exp(s[j] - lse[i]) * (keep(b, i, j) ? keep_scale : 0.0f);
                if (pj != 0.0f) axpy(pj, Vb + j * Ev, o, Ev);
            }
        }

        // Pass 2, the backward, recomputing P from the scores and the saved log-sum-exp.
        for (std::size_t i = 0; i < L; ++i) {
            float* dq = dQb + i * E;
            std::fill(dq, dq + E, 0.0f);
            if (lse[i] == neg_inf) continue;  // a fully masked row passes no gradient
            scores(b, i, Qb, Kb);
            const float* dout = dOb + i * Ev;
            float D = 0.0f;  // D_i = Σ_j P_ij dP_ij
            for (std::size_t j = 0; j < S; ++j) {
                const float pj = std::exp(s[j] - lse[i]);
                p[j] = pj;
                const float mult = keep(b, i, j) ? keep_scale : 0.0f;
                float dp = 0.0f;
                if (pj * mult != 0.0f) {
                    axpy(pj * mult, dout, dVb + j * Ev, Ev);     // dV_j += Pd_ij · dO_i
                    dp = dot(dout, Vb + j * Ev, Ev) * mult;     // dP_ij
                }
                s[j] = dp;  // s now holds dP for this row
                D += pj * dp;
            }
            for (std::size_t j = 0; j < S; ++j) {
                if (p[j] == 0.0f) continue;
                const float ds = p[j] * (s[j] - D) * plan.scale;  // scale · dS_ij
                axpy(ds, Kb + j * E, dq, E);                      // dQ_i += scale · dS_ij K_j
                axpy(ds, Qb + i * E, dKb + j * E, E);             // dK_j += scale · dS_ij Q_i
            }
        }
    }
}

bool all_finite(const float* x, std::size_t n) {
    for (std::size_t e = 0; e < n; ++e)
        if (!std::isfinite(x[e])) return false;
    return true;
}

// (rows, cols) -> (cols, rows)
void transpose(const float* x, std::size_t rows, std::size_t cols, float* y) {
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) y[c * rows + r] = x[r * cols + c];
}

// Blocks of query rows, with every product on the SIMD linear kernel (float64 sums):
//   scores = Q Kᵀ, O = Pd V, dPd = dO Vᵀ, dQ = dS K, dK += dSᵀ Q, dV += Pdᵀ dO.
void backward_blocked(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                      const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                      float* grad_key, float* grad_value, void* workspace) {
    const std::size_t L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    const std::size_t Lb = std::min(L, BlockScratch::kRows);  // query rows per block
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t mask_step = plan.mask_col_stride();
    const float keep_scale = plan.dropout_p > 0.0 ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    std::fill(grad_key, grad_key + plan.kv_problems() * S * E, 0.0f);
    std::fill(grad_value, grad_value + plan.kv_problems() * S * Ev, 0.0f);
    const kernels::KernelSet& set = *plan.kernel_set;
    BlockScratch w{};
    BlockScratch::layout(plan, set, workspace, &w);
    // y (rows, out) = x (rows, in) · Wᵀ with W stored (out, in)
    auto linear = [&](std::size_t rows, std::size_t in, std::size_t out, const float* x, const float* W, float* y) {
        kernels::LinearProblem p;
        p.rows = rows, p.in = in, p.out = out;
        p.x = x, p.x_stride = in, p.w = W, p.y = y, p.y_stride = out;
        kernels::run_linear(set, p, w.linear);
    };

    for (std::size_t b = 0; b < plan.batch; ++b) {
        const std::size_t kv = plan.kv_index(b);
        const float* Qb = query + b * L * E;          // (L, E)
        const float* Kb = key + kv * S * E;           // (S, E)
        const float* Vb = value + kv * S * Ev;        // (S, Ev)
        const float* dOb = grad_output + b * L * Ev;  // (L, Ev)
        float* Ob = output + b * L * Ev;              // (L, Ev)
        float* dQb = grad_query + b * L * E;          // (L, E)
        float* dKb = grad_key + kv * S * E;           // (S, E), shared by a GQA group
        float* dVb = grad_value + kv * S * Ev;        // (S, Ev)
        transpose(Kb, S, E, w.Kt);
        transpose(Vb, S, Ev, w.Vt);
        for (std::size_t i0 = 0; i0 < L; i0 += Lb) {
            const std::size_t nb = std::min(Lb, L - i0);
            // Steps 1-2: scores of the block.   (nb, E) x (E, S) -> (nb, S)
            linear(nb, E, S, Qb + i0 * E, Kb, w.P);
            // Step 3 with the saved statistic: P = exp(s - lse), lse = max + log(sum); fully masked rows stay 0.
            for (std::size_t r = 0; r < nb; ++r) {
                const std::size_t i = i0 + r;
                float* p = w.P + r * S;
                const std::size_t mask_row = plan.mask_kind == MaskKind::none ? 0 : plan.mask_row_offset(b, i);
                float m = neg_inf;
                bool any_nan = false;
                for (std::size_t j = 0; j < S; ++j) {
                    float x = neg_inf;
                    if (plan.causal_visible(i, j)) x = plan.apply_mask(p[j] * plan.scale, mask, mask_row + j * mask_step);
                    p[j] = x;
                    if (x > m) m = x;
                    any_nan |= x != x;
                }
                float* pd = w.Pd + r * S;
                if (m == neg_inf && !any_nan) {
                    std::fill(p, p + S, 0.0f);
                    std::fill(pd, pd + S, 0.0f);
                    continue;
                }
                float sum = 0.0f;
                for (std::size_t j = 0; j < S; ++j) sum += std::exp(p[j] - m);
                const float lse = m + std::log(sum);
                for (std::size_t j = 0; j < S; ++j) {
                    p[j] = std::exp(p[j] - lse);
                    const bool kept = plan.dropout_p <= 0.0 || dropout_keeps(plan.seed, plan.dropout_p, (b * L + i) * S + j);
                    pd[j] = kept ? p[j] * keep_scale : 0.0f;
                }
            }
            // Step 4: O = Pd V.   (nb, S) x (S, Ev) -> (nb, Ev)
            linear(nb, S, Ev, w.Pd, w.Vt, Ob + i0 * Ev);
            // dPd = dO Vᵀ.   (nb, Ev) x (Ev, S) -> (nb, S)
            linear(nb, Ev, S, dOb + i0 * Ev, Vb, w.dP);
            // dP = dPd ⊙ dropout (0 where Pd is 0); D_i = Σ_j P_ij dP_ij; dS = scale · P ⊙ (dP − D), kept in dP.
            for (std::size_t r = 0; r < nb; ++r) {
                const float* p = w.P + r * S;
                const float* pd = w.Pd + r * S;
                float* dp = w.dP + r * S;
                float D = 0.0f;
                for (std::size_t j = 0; j < S; ++j) {
                    dp[j] = pd[j] == 0.0f ? 0.0f : dp[j] * (pd[j] / p[j]);
                    D += p[j] * dp[j];
                }
                for (std::size_t j = 0; j < S; ++j) dp[j] = p[j] == 0.0f ? 0.0f : p[j] * (dp[j] - D) * plan.scale;
            }
            // dQ = dS K.   (nb, S) x (S, E) -> (nb, E)
            linear(nb, S, E, w.dP, w.Kt, dQb + i0 * E);
            // dK += dSᵀ Q and dV += Pdᵀ dO.   (S, nb) x (nb, E) and (S, nb) x (nb, Ev)
            transpose(w.dP, nb, S, w.dSt);
            transpose(Qb + i0 * E, nb, E, w.Qt);
            linear(S, nb, E, w.dSt, w.Qt, w.partK);
            transpose(w.Pd, nb, S, w.Pdt);
            transpose(dOb + i0 * Ev, nb, Ev, w.dOt);
            linear(S, nb, Ev, w.Pdt, w.dOt, w.partV);
            for (std::size_t e = 0; e < S * E; ++e) dKb[e] += w.partK[e];
            for (std::size_t e = 0; e < S * Ev; ++e) dVb[e] += w.partV[e];
        }
    }
}

}  // namespace

void run_sdpa_backward(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                       const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                       float* grad_key, float* grad_value, void* workspace) {
    const std::size_t n_q = plan.problems * plan.L * plan.E, n_k = plan.kv_problems() * plan.S * plan.E;
    const std::size_t n_v = plan.kv_problems() * plan.S * plan.Ev, n_o = plan.problems * plan.L * plan.Ev;
    const bool blocked = blocked_dims(plan) && all_finite(query, n_q) && all_finite(key, n_k) &&
                         all_finite(value, n_v) && all_finite(grad_output, n_o);
    if (blocked)
        backward_blocked(plan, query, key, value, mask, grad_output, output, grad_query, grad_key, grad_value,
                         workspace);
    else
        backward_rows(plan, query, key, value, mask, grad_output, output, grad_query, grad_key, grad_value, workspace);
}

void run_sdpa_backward(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                       const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                       float* grad_key, float* grad_value) {
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_sdpa_backward(plan, query, key, value, mask, grad_output, output, grad_query, grad_key, grad_value,
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
        throw std::invalid_argument(st.error);
    GradientResult r;
    r.output = xt::xarray<float>::from_shape(plan.output_shape);
    r.grad_query = xt::xarray<float>::from_shape(q);
    r.grad_key = xt::xarray<float>::from_shape(k);
    r.grad_value = xt::xarray<float>::from_shape(v);
    run_sdpa_backward(plan, query.data(), key.data(), value.data(), mask, grad_output.data(), r.output.data(),
                      r.grad_query.data(), r.grad_key.data(), r.grad_value.data());
    return r;
}

}  // namespace xattn
