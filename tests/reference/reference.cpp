#include "reference.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

namespace xattn {
namespace {

using xt::all;
using xt::newaxis;
constexpr double kInf = std::numeric_limits<double>::infinity();

Shape shape_of(const xt::xarray<double>& a) { return Shape(a.shape().begin(), a.shape().end()); }

// (N, A, B) x (N, B, C) -> (N, A, C), as a sum over the shared axis.
xt::xtensor<double, 3> bmm(const xt::xtensor<double, 3>& x, const xt::xtensor<double, 3>& y) {
    return xt::sum(xt::view(x, all(), all(), all(), newaxis()) * xt::view(y, all(), newaxis(), all(), all()), {2});
}

// The same, where a zero factor in x contributes nothing even against a NaN or inf in y: the rule
// that keeps masked keys (weight 0) from reaching anything.
xt::xtensor<double, 3> bmm_skip_zero(const xt::xtensor<double, 3>& x, const xt::xtensor<double, 3>& y) {
    auto X = xt::view(x, all(), all(), all(), newaxis());
    auto Y = xt::view(y, all(), newaxis(), all(), all());
    return xt::sum(xt::where(xt::equal(X, 0.0), 0.0, X * Y), {2});
}

xt::xtensor<double, 3> transpose12(const xt::xtensor<double, 3>& x) { return xt::transpose(x, {0, 2, 1}); }

// Every intermediate of the forward pass, flattened to N = product of the leading dims problems.
struct Forward {
    SdpaPlan plan;
    xt::xtensor<double, 3> Q, K, V;  // (N, L, E), (N, S, E), (N, S, Ev); K and V gathered per query head
    xt::xtensor<double, 3> P;        // (N, L, S) the softmax weights
    xt::xtensor<double, 3> drop;     // (N, L, S) the dropout multiplier: 1/(1-p) kept, 0 dropped
    xt::xtensor<double, 3> Pd;       // (N, L, S) the weights after dropout
    xt::xtensor<double, 3> O;        // (N, L, Ev)
};

Forward forward(const xt::xarray<double>& query, const xt::xarray<double>& key, const xt::xarray<double>& value,
                const SdpaOptions& options, const SdpaPlan& plan) {
    Forward f;
    f.plan = plan;
    const std::size_t N = plan.problems, L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;

    // Flatten the leading dims to N problems; under GQA each query head reads its kv head.
    f.Q = xt::reshape_view(query, {N, L, E});  // (N, L, E)
    f.K = xt::zeros<double>({N, S, E});         // (N, S, E)
    f.V = xt::zeros<double>({N, S, Ev});        // (N, S, Ev)
    const std::size_t kv_problems = plan.kv_problems();
    auto K_all = xt::reshape_view(key, {kv_problems, S, E});     // (N / group, S, E)
    auto V_all = xt::reshape_view(value, {kv_problems, S, Ev});  // (N / group, S, Ev)
    for (std::size_t b = 0; b < N; ++b) {
        xt::view(f.K, b) = xt::view(K_all, plan.kv_index(b));
        xt::view(f.V, b) = xt::view(V_all, plan.kv_index(b));
    }
    if (S == 0) {  // no keys: every row is a row without keys, zero (xtensor's reductions over an empty axis are UB)
        f.P = f.drop = f.Pd = xt::zeros<double>({N, L, S});  // (N, L, 0)
        f.O = xt::zeros<double>({N, L, Ev});                 // (N, L, Ev)
        return f;
    }

    // Step 1: scores = Q Kᵀ                          (N, L, E) x (N, E, S) -> (N, L, S)
    xt::xtensor<double, 3> scores = bmm(f.Q, transpose12(f.K));
    // Step 2: scale by 1/sqrt(E) (or the given scale) (N, L, S)
    scores *= static_cast<double>(plan.scale);

    // The mask and the causal rule: a float mask is added; a boolean mask or the causal rule
    // forbids, and a forbidden score is -inf whatever the inputs held (so a NaN in a masked key
    // never reaches the query).
    xt::xtensor<double, 3> bias = xt::zeros<double>({N, L, S});  // (N, L, S)
    xt::xtensor<bool, 3> allowed = xt::ones<bool>({N, L, S});    // (N, L, S)
    if (options.attn_mask.kind == MaskKind::additive)
        bias = xt::reshape_view(xt::cast<double>(xt::broadcast(options.attn_mask.values, plan.weights_shape)),
                                {N, L, S});
    if (options.attn_mask.kind == MaskKind::boolean)
        allowed = xt::reshape_view(xt::broadcast(options.attn_mask.bools, plan.weights_shape), {N, L, S});
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j)
            if (!plan.causal_visible(i, j)) xt::view(allowed, all(), i, j) = false;
    scores = xt::where(allowed, scores + bias, -kInf);

    // Step 3: softmax over keys (the last axis), shifted by the row max.   (N, L, S)
    // A row whose every key is masked (max -inf) gets weights 0 instead of 0/0.
    xt::xtensor<double, 3> row_max = xt::amax(scores, {2}, xt::keep_dims);  // (N, L, 1)
    for (double& m : row_max)
        if (m == -kInf) m = 0.0;  // exp(-inf - 0) = 0 for every key of a fully masked row
    xt::xtensor<double, 3> exps = xt::exp(scores - row_max);                // (N, L, S)
    xt::xtensor<double, 3> row_sum = xt::sum(exps, {2}, xt::keep_dims);      // (N, L, 1)
    f.P = xt::where(xt::equal(row_sum, 0.0), 0.0, exps / row_sum);          // (N, L, S)

    // Dropout: the same (seed, position) decisions as every kernel.
    f.drop = xt::ones<double>({N, L, S});
    if (plan.dropout_p > 0.0)
        for (std::size_t b = 0; b < N; ++b)
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = 0; j < S; ++j)
                    f.drop(b, i, j) =
                        dropout_keeps(plan.seed, plan.dropout_p, (b * L + i) * S + j) ? 1.0 / (1.0 - plan.dropout_p) : 0.0;
    f.Pd = f.P * f.drop;

    // Step 4: output = weights V                     (N, L, S) x (N, S, Ev) -> (N, L, Ev)
    // A key with weight 0 contributes nothing, even when its value row holds NaN or inf.
    auto W = xt::view(f.Pd, all(), all(), all(), newaxis());  // (N, L, S, 1)
    auto Vs = xt::view(f.V, all(), newaxis(), all(), all());   // (N, 1, S, Ev)
    f.O = xt::sum(xt::where(xt::equal(W, 0.0), 0.0, W * Vs), {2});
    return f;
}

SdpaPlan plan_or_throw(const Shape& q, const Shape& k, const Shape& v, const SdpaOptions& options) {
    SdpaSettings settings = settings_of(options);
    settings.need_weights = true;
    SdpaPlan plan;
    if (Status st = plan_sdpa(q, k, v, options.attn_mask.kind, options.attn_mask.ref().shape, settings, &plan); !st.ok())
        throw std::invalid_argument(st.message());
    return plan;
}

}  // namespace

ReferenceResult64 reference_sdpa_f64(const xt::xarray<double>& query, const xt::xarray<double>& key,
                                     const xt::xarray<double>& value, const SdpaOptions& options) {
    const SdpaPlan plan = plan_or_throw(shape_of(query), shape_of(key), shape_of(value), options);
    const Forward f = forward(query, key, value, options, plan);
    return {xt::reshape_view(f.O, plan.output_shape), xt::reshape_view(f.Pd, plan.weights_shape)};
}

AttentionResult reference_sdpa(const xt::xarray<float>& query, const xt::xarray<float>& key,
                               const xt::xarray<float>& value, const SdpaOptions& options) {
    const ReferenceResult64 r = reference_sdpa_f64(xt::cast<double>(query), xt::cast<double>(key),
                                                   xt::cast<double>(value), options);
    return {xt::cast<float>(r.output), xt::cast<float>(r.weights)};
}

GradientResult reference_sdpa_backward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                       const xt::xarray<float>& value, const xt::xarray<float>& grad_output,
                                       const SdpaOptions& options) {
    const Shape qs(query.shape().begin(), query.shape().end()), ks(key.shape().begin(), key.shape().end()),
        vs(value.shape().begin(), value.shape().end()), gs(grad_output.shape().begin(), grad_output.shape().end());
    SdpaPlan checked;
    if (Status st = plan_sdpa_backward(qs, ks, vs, gs, options.attn_mask.kind, options.attn_mask.ref().shape,
                                       settings_of(options), &checked);
        !st.ok())
        throw std::invalid_argument(st.message());
    const SdpaPlan plan = plan_or_throw(qs, ks, vs, options);
    const Forward f = forward(xt::cast<double>(query), xt::cast<double>(key), xt::cast<double>(value), options, plan);
    const std::size_t N = plan.problems, L = plan.L, S = plan.S, Ev = plan.Ev;
    const xt::xtensor<double, 3> dO = xt::reshape_view(xt::cast<double>(grad_output), {N, L, Ev});  // (N, L, Ev)

    // dV = Pdᵀ dO                                     (N, S, L) x (N, L, Ev) -> (N, S, Ev)
    const xt::xtensor<double, 3> dV = bmm_skip_zero(transpose12(f.Pd), dO);
    // dP = (dO Vᵀ) ⊙ dropout; 0 where the weight after dropout is 0 (as the forward skips those values)
    const xt::xtensor<double, 3> dPd = bmm(dO, transpose12(f.V));                       // (N, L, S)
    const xt::xtensor<double, 3> dP = xt::where(xt::equal(f.Pd, 0.0), 0.0, dPd * f.drop);  // (N, L, S)
    // Softmax backward: dS = P ⊙ (dP − D), D_i = Σ_j P_ij dP_ij             (N, L, S)
    const xt::xtensor<double, 3> D = xt::sum(f.P * dP, {2}, xt::keep_dims);            // (N, L, 1)
    const xt::xtensor<double, 3> dS = xt::where(xt::equal(f.P, 0.0), 0.0, f.P * (dP - D));
    // Through the scaled product: dQ = scale · dS K, dK = scale · dSᵀ Q
    const double scale = plan.scale;
    // (a zero dS, e.g. a masked key, passes nothing, as in the forward)
    const xt::xtensor<double, 3> dQ = scale * bmm_skip_zero(dS, f.K);               // (N, L, E)
    const xt::xtensor<double, 3> dK = scale * bmm_skip_zero(transpose12(dS), f.Q);  // (N, S, E) per query head

    // Under GQA each key/value head collects the gradients of the query heads that read it.
    const std::size_t kv_problems = plan.kv_problems();
    xt::xtensor<double, 3> dK_kv = xt::zeros<double>({kv_problems, S, plan.E});
    xt::xtensor<double, 3> dV_kv = xt::zeros<double>({kv_problems, S, Ev});
    for (std::size_t b = 0; b < N; ++b) {
        xt::view(dK_kv, plan.kv_index(b)) += xt::view(dK, b);
        xt::view(dV_kv, plan.kv_index(b)) += xt::view(dV, b);
    }

    GradientResult r;
    r.output = xt::reshape_view(xt::cast<float>(f.O), plan.output_shape);
    r.grad_query = xt::reshape_view(xt::cast<float>(dQ), qs);
    r.grad_key = xt::reshape_view(xt::cast<float>(dK_kv), ks);
    r.grad_value = xt::reshape_view(xt::cast<float>(dV_kv), vs);
    return r;
}

}  // namespace xattn
