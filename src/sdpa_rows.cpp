// The row-at-a-time attention kernel: one query row's scores, softmax and weighted sum at a time,
// so without need_weights only S floats of scratch are used. Plain C++, kept as the readable
// baseline: run_sdpa runs the tiled SIMD kernels (src/kernels/), which the tests check against both
// this and the float64 reference.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/dropout_hash.hpp"
#include "xattn/sdpa.hpp"

namespace xattn {

bool dropout_keeps(std::uint64_t seed, double p, std::uint64_t position) {
    // splitmix64 of (seed, position), kept iff uniform (h >> 11)·2^-53 >= p: see kernels/dropout_hash.hpp.
    return kernels::dropout_keep(seed, kernels::dropout_threshold(p), position);
}

namespace {

float dot(const float* a, const float* b, std::size_t n) {
    float acc = 0.0f;
    for (std::size_t e = 0; e < n; ++e) acc += a[e] * b[e];
    return acc;
}

}  // namespace

std::uint64_t sdpa_rows_workspace_bytes(const SdpaPlan& plan) {
    return plan.batch == 0 || plan.need_weights ? 0 : std::uint64_t{plan.S} * sizeof(float);
}

void run_sdpa_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value, const MaskRef& mask,
                   float* output, float* weights) {
    std::vector<float> scratch(sdpa_rows_workspace_bytes(plan) / sizeof(float));
    run_sdpa_rows(plan, query, key, value, mask, output, weights, scratch.data());
}

void run_sdpa_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value, const MaskRef& mask,
                   float* output, float* weights, void* workspace, float* scores) {
    if (plan.batch == 0) return;  // nothing to compute; S may be huge when it is (E = Ev = 0)
    const std::size_t L = plan.L, S = plan.S, E = plan.E, Ev = plan.Ev;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t mask_step = plan.mask_col_stride();
    const float keep_scale = plan.dropout_p > 0.0 ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    float* scratch = static_cast<float*>(workspace);  // (S,) a query's scores when no weights row holds them

    for (std::size_t b = 0; b < plan.batch; ++b) {
        const std::size_t kv = plan.kv_index(b);
        const float* Qb = query + b * L * E;    // (L, E)
        const float* Kb = key + kv * S * E;     // (S, E)
        const float* Vb = value + kv * S * Ev;  // (S, Ev)
        float* Ob = output + b * L * Ev;        // (L, Ev)
        for (std::size_t i = 0; i < L; ++i) {
            float* p = weights ? weights + (b * L + i) * S : scratch;  // (S,) this query's row
            float* o = Ob + i * Ev;                                           // (Ev,)
            const std::size_t mask_row = plan.mask_kind == MaskKind::none ? 0 : plan.mask_row_offset(b, i);
            float* stage = scores ? scores + (b * L + i) * S : nullptr;  // (S,) this query's returned scores

            // Steps 1 and 2: scores q_i · k_j, scaled, soft-capped, with the mask and the rules applied.
            float row_max = neg_inf;
            bool any_nan = false;
            for (std::size_t j = 0; j < S; ++j) {
                const float scaled = dot(Qb + i * E, Kb + j * E, E) * plan.scale;
                const float capped = plan.cap(scaled);
                float s = neg_inf;
                if (plan.key_visible(b, i, j)) {
                    s = plan.apply_mask(capped, mask, mask_row + j * mask_step);
                    if (!plan.alibi_slopes.empty()) s += plan.alibi_bias(b, i, j);
                }
                if (stage)
                    stage[j] = plan.return_scores == ScoresStage::scaled ? scaled
                               : plan.return_scores == ScoresStage::softcapped ? capped
                                                                                : s;
                p[j] = s;
                if (s > row_max) row_max = s;
                any_nan |= s != s;
            }

            // A row with every key masked attends to nothing: weights 0, output 0 (PyTorch >= 2.5).
            if (row_max == neg_inf && !any_nan) {
                for (std::size_t j = 0; j < S; ++j) p[j] = 0.0f;
                for (std::size_t c = 0; c < Ev; ++c) o[c] = 0.0f;
                continue;
            }

            // Step 3: softmax over keys, shifted by the row max so exp never overflows.
            float sum = 0.0f;
            for (std::size_t j = 0; j < S; ++j) {
                p[j] = std::exp(p[j] - row_max);
                sum += p[j];
            }
            const float inv_sum = 1.0f / sum;
            for (std::size_t j = 0; j < S; ++j) p[j] *= inv_sum;

            if (plan.dropout_p > 0.0)
                for (std::size_t j = 0; j < S; ++j)
                    p[j] = dropout_keeps(plan.seed, plan.dropout_p, (b * L + i) * S + j) ? p[j] * keep_scale : 0.0f;

            // Step 4: output row = Σ_j p_j · v_j; a zero weight contributes nothing (not even a NaN).
            for (std::size_t c = 0; c < Ev; ++c) o[c] = 0.0f;
            for (std::size_t j = 0; j < S; ++j) {
                const float pj = p[j];
                if (pj == 0.0f) continue;
                const float* vj = Vb + j * Ev;
                for (std::size_t c = 0; c < Ev; ++c) o[c] += pj * vj[c];
            }
        }
    }
}

}  // namespace xattn
