// Attention backward, one query row at a time (the layout of the row forward kernel):
//   pass 1 (forward): scores, row max, row sum → output row and the row's log-sum-exp
//   pass 2 (backward): recompute P_ij = exp(s_ij − lse_i), then dV, dP, D_i, dS, dQ, dK.
// Inner loops run over E or Ev with several independent accumulators so the compiler vectorises them.
#include "xattn/sdpa_backward.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <algorithm>
#include <vector>

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
    *plan = std::move(p);
    return {};
}

namespace {

// One query row at a time: the readable baseline, and the path for non-finite inputs (whose NaN and
// inf rules it states exactly) and for zero-width problems.
void backward_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                   const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                   float* grad_key, float* grad_value) {
    const std::size_t L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t mask_step = plan.mask_col_stride();
    const float keep_scale = plan.dropout_p > 0.0 ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    // An empty output means a zero loss: every gradient is 0, and plan.batch is 0 (nothing to loop over).
    std::fill(grad_query, grad_query + plan.problems * L * E, 0.0f);
    std::fill(grad_key, grad_key + plan.kv_problems() * S * E, 0.0f);
    std::fill(grad_value, grad_value + plan.kv_problems() * S * Ev, 0.0f);
    if (plan.batch == 0) return;  // and S may be huge when E = Ev = 0: allocate nothing
    std::vector<float> s(S), p(S), lse(L);

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
// Extra memory is O(block · S + S · (E + Ev)), never (L, S) for the whole problem.
void backward_blocked(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                      const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                      float* grad_key, float* grad_value) {
    const std::size_t L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    const std::size_t Lb = std::min<std::size_t>(L, 64);  // query rows per block
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t mask_step = plan.mask_col_stride();
    const float keep_scale = plan.dropout_p > 0.0 ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    std::fill(grad_key, grad_key + plan.kv_problems() * S * E, 0.0f);
    std::fill(grad_value, grad_value + plan.kv_problems() * S * Ev, 0.0f);
    std::vector<float> Kt(E * S), Vt(Ev * S);                          // (E, S), (Ev, S)
    std::vector<float> P(Lb * S), Pd(Lb * S), dP(Lb * S);               // (Lb, S) each
    std::vector<float> Pdt(S * Lb), dSt(S * Lb), Qt(E * Lb), dOt(Ev * Lb);
    std::vector<float> partK(S * E), partV(S * Ev);                     // one block's dK, dV
    const kernels::KernelSet& set = kernels::active_kernels();
    // y (rows, out) = x (rows, in) · wᵀ with w stored (out, in)
    auto linear = [&](std::size_t rows, std::size_t in, std::size_t out, const float* x, const float* w, float* y) {
        kernels::LinearProblem p;
        p.rows = rows, p.in = in, p.out = out;
        p.x = x, p.x_stride = in, p.w = w, p.y = y, p.y_stride = out;
        kernels::run_linear(set, p);
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
        transpose(Kb, S, E, Kt.data());
        transpose(Vb, S, Ev, Vt.data());
        for (std::size_t i0 = 0; i0 < L; i0 += Lb) {
            const std::size_t nb = std::min(Lb, L - i0);
            // Steps 1-2: scores of the block.   (nb, E) x (E, S) -> (nb, S)
            linear(nb, E, S, Qb + i0 * E, Kb, P.data());
            // Step 3 with the saved statistic: P = exp(s - lse), lse = max + log(sum); fully masked rows stay 0.
            for (std::size_t r = 0; r < nb; ++r) {
                const std::size_t i = i0 + r;
                float* p = P.data() + r * S;
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
                float* pd = Pd.data() + r * S;
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
            linear(nb, S, Ev, Pd.data(), Vt.data(), Ob + i0 * Ev);
            // dPd = dO Vᵀ.   (nb, Ev) x (Ev, S) -> (nb, S)
            linear(nb, Ev, S, dOb + i0 * Ev, Vb, dP.data());
            // dP = dPd ⊙ dropout (0 where Pd is 0); D_i = Σ_j P_ij dP_ij; dS = scale · P ⊙ (dP − D), kept in dP.
            for (std::size_t r = 0; r < nb; ++r) {
                const float* p = P.data() + r * S;
                const float* pd = Pd.data() + r * S;
                float* dp = dP.data() + r * S;
                float D = 0.0f;
                for (std::size_t j = 0; j < S; ++j) {
                    dp[j] = pd[j] == 0.0f ? 0.0f : dp[j] * (pd[j] / p[j]);
                    D += p[j] * dp[j];
                }
                for (std::size_t j = 0; j < S; ++j) dp[j] = p[j] == 0.0f ? 0.0f : p[j] * (dp[j] - D) * plan.scale;
            }
            // dQ = dS K.   (nb, S) x (S, E) -> (nb, E)
            linear(nb, S, E, dP.data(), Kt.data(), dQb + i0 * E);
            // dK += dSᵀ Q and dV += Pdᵀ dO.   (S, nb) x (nb, E) and (S, nb) x (nb, Ev)
            transpose(dP.data(), nb, S, dSt.data());
            transpose(Qb + i0 * E, nb, E, Qt.data());
            linear(S, nb, E, dSt.data(), Qt.data(), partK.data());
            transpose(Pd.data(), nb, S, Pdt.data());
            transpose(dOb + i0 * Ev, nb, Ev, dOt.data());
            linear(S, nb, Ev, Pdt.data(), dOt.data(), partV.data());
            for (std::size_t e = 0; e < S * E; ++e) dKb[e] += partK[e];
            for (std::size_t e = 0; e < S * Ev; ++e) dVb[e] += partV[e];
        }
    }
}

}  // namespace

void run_sdpa_backward(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                       const MaskRef& mask, const float* grad_output, float* output, float* grad_query,
                       float* grad_key, float* grad_value) {
    const std::size_t n_q = plan.problems * plan.L * plan.E, n_k = plan.kv_problems() * plan.S * plan.E;
    const std::size_t n_v = plan.kv_problems() * plan.S * plan.Ev, n_o = plan.problems * plan.L * plan.Ev;
    const bool blocked = plan.batch > 0 && plan.L && plan.S && plan.E && plan.Ev && all_finite(query, n_q) &&
                         all_finite(key, n_k) && all_finite(value, n_v) && all_finite(grad_output, n_o);
    if (blocked)
        backward_blocked(plan, query, key, value, mask, grad_output, output, grad_query, grad_key, grad_value);
    else
        backward_rows(plan, query, key, value, mask, grad_output, output, grad_query, grad_key, grad_value);
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
