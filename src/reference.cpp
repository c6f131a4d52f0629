#include "xattn/reference.hpp"

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

AttentionResult reference_sdpa(const xt::xarray<float>& query, const xt::xarray<float>& key,
                               const xt::xarray<float>& value, const SdpaOptions& options) {
    using xt::all;
    using xt::newaxis;
    const Shape qs(query.shape().begin(), query.shape().end());
    const Shape ks(key.shape().begin(), key.shape().end());
    const Shape vs(value.shape().begin(), value.shape().end());
    SdpaSettings settings = settings_of(options);
    settings.need_weights = true;
    SdpaPlan plan;
    if (Status st = plan_sdpa(qs, ks, vs, options.attn_mask.kind, options.attn_mask.ref().shape, settings, &plan);
        !st.ok())
        throw std::invalid_argument(st.error);
    const std::size_t N = plan.batch, L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    const double inf = std::numeric_limits<double>::infinity();

    // Flatten the leading dims to N problems; under GQA each query head reads its kv head.
    xt::xtensor<double, 3> Q = xt::cast<double>(xt::reshape_view(query, {N, L, E}));  // (N, L, E)
    xt::xtensor<double, 3> K = xt::zeros<double>({N, S, E});                           // (N, S, E)
    xt::xtensor<double, 3> V = xt::zeros<double>({N, S, Ev});                          // (N, S, Ev)
    const std::size_t kv_problems = plan.batch / plan.q_heads * plan.kv_heads;
    auto K_all = xt::reshape_view(key, {kv_problems, S, E});     // (N / group, S, E)
    auto V_all = xt::reshape_view(value, {kv_problems, S, Ev});  // (N / group, S, Ev)
    for (std::size_t b = 0; b < N; ++b) {
        xt::view(K, b) = xt::cast<double>(xt::view(K_all, plan.kv_index(b)));
        xt::view(V, b) = xt::cast<double>(xt::view(V_all, plan.kv_index(b)));
    }

    // Step 1: scores = Q Kᵀ                          (N, L, E) x (N, E, S) -> (N, L, S)
    xt::xtensor<double, 3> scores = xt::sum(xt::view(Q, all(), all(), newaxis(), all()) *
                                                xt::view(K, all(), newaxis(), all(), all()),
                                            {3});
    // Step 2: scale by 1/sqrt(E) (or the given scale) (N, L, S)
    scores *= static_cast<double>(plan.scale);

    // The mask and the causal rule: a float mask is added; a boolean mask or the causal rule
    // forbids, and a forbidden score is -inf whatever the inputs held (so a NaN in a masked key
    // never reaches the query).
    xt::xtensor<double, 3> bias = xt::zeros<double>({N, L, S});      // (N, L, S)
    xt::xtensor<bool, 3> allowed = xt::ones<bool>({N, L, S});        // (N, L, S)
    if (options.attn_mask.kind == MaskKind::additive)
        bias = xt::reshape_view(xt::cast<double>(xt::broadcast(options.attn_mask.values, plan.weights_shape)),
                                {N, L, S});
    if (options.attn_mask.kind == MaskKind::boolean)
        allowed = xt::reshape_view(xt::broadcast(options.attn_mask.bools, plan.weights_shape), {N, L, S});
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j)
            if (!plan.causal_visible(i, j)) xt::view(allowed, all(), i, j) = false;
    scores = xt::where(allowed, scores + bias, -inf);

    // Step 3: softmax over keys (the last axis), shifted by the row max.   (N, L, S)
    // A row whose every key is masked (max -inf) gets weights 0 instead of 0/0.
    xt::xtensor<double, 3> row_max = xt::amax(scores, {2}, xt::keep_dims);  // (N, L, 1)
    for (double& m : row_max)
        if (m == -inf) m = 0.0;  // exp(-inf - 0) = 0 for every key of a fully masked row
    xt::xtensor<double, 3> exps = xt::exp(scores - row_max);                            // (N, L, S)
    xt::xtensor<double, 3> row_sum = xt::sum(exps, {2}, xt::keep_dims);                  // (N, L, 1)
    xt::xtensor<double, 3> weights = xt::where(xt::equal(row_sum, 0.0), 0.0, exps / row_sum);  // (N, L, S)

    if (plan.dropout_p > 0.0)
        for (std::size_t b = 0; b < N; ++b)
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = 0; j < S; ++j)
                    weights(b, i, j) = dropout_keeps(plan.seed, plan.dropout_p, (b * L + i) * S + j)
                                           ? weights(b, i, j) / (1.0 - plan.dropout_p)
                                           : 0.0;

    // Step 4: output = weights V                     (N, L, S) x (N, S, Ev) -> (N, L, Ev)
    // A key with weight 0 contributes nothing, even when its value row holds NaN or inf.
    auto W = xt::view(weights, all(), all(), all(), newaxis());  // (N, L, S, 1)
    auto Vs = xt::view(V, all(), newaxis(), all(), all());       // (N, 1, S, Ev)
    xt::xtensor<double, 3> out = xt::sum(xt::where(xt::equal(W, 0.0), 0.0, W * Vs), {2});

    AttentionResult result;
    result.output = xt::reshape_view(xt::cast<float>(out), plan.output_shape);
    result.weights = xt::reshape_view(xt::cast<float>(weights), plan.weights_shape);
    return result;
}

}  // namespace xattn
