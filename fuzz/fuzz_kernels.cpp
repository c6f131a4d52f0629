// Fuzzes the fast kernels against the float64 reference on small random problems: shapes, masks,
// causal settings (with or without a mask), the rules (soft-cap, window, ALiBi, key lengths), returned scores, GQA,
// dropout, and values that include ±inf, NaN, huge and subnormal numbers.
//   moderate values:  kernel == reference within the golden tolerance (weights, output and scores)
//   any values:       no crash; weights are NaN or in [0, 1/(1-p)]; rows the mask and the rules
//                     leave without keys give exactly 0
#include <cmath>
#include <vector>

#include "fuzz_common.hpp"

namespace {

float value(FuzzedDataProvider& in, bool extreme) {
    if (extreme) {
        switch (in.ConsumeIntegralInRange<int>(0, 9)) {
            case 0: return std::numeric_limits<float>::quiet_NaN();
            case 1: return std::numeric_limits<float>::infinity();
            case 2: return -std::numeric_limits<float>::infinity();
            case 3: return 1e30f;
            case 4: return -3e20f;
            case 5: return std::numeric_limits<float>::denorm_min() * in.ConsumeIntegralInRange<int>(1, 1000);
            default: break;
        }
    }
    return in.ConsumeFloatingPointInRange<float>(-2.0f, 2.0f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const std::size_t B = in.ConsumeIntegralInRange<std::size_t>(1, 2), Hkv = in.ConsumeIntegralInRange<std::size_t>(1, 2);
    const std::size_t group = in.ConsumeIntegralInRange<std::size_t>(1, 3);
    const std::size_t L = in.ConsumeIntegralInRange<std::size_t>(1, 19), S = in.ConsumeIntegralInRange<std::size_t>(1, 19);
    const std::size_t E = in.ConsumeIntegralInRange<std::size_t>(1, 19), Ev = in.ConsumeIntegralInRange<std::size_t>(1, 19);
    const bool extreme = in.ConsumeBool();
    xattn::SdpaOptions o;
    o.enable_gqa = group > 1;
    o.need_weights = true;
    const int mode = in.ConsumeIntegralInRange<int>(0, 3);  // none, causal, bool mask, float mask
    o.is_causal = mode == 1 || (mode >= 2 && in.ConsumeBool());
    o.causal_alignment = in.ConsumeBool() ? xattn::CausalAlignment::bottom_right : xattn::CausalAlignment::top_left;
    if (in.ConsumeBool()) {
        // A valid scale: non-zero as the float32 the kernels multiply by (fuzz_plan covers the refusals).
        const double scale = in.ConsumeFloatingPointInRange<double>(-2.0, 2.0) + (in.ConsumeBool() ? 0.25 : -0.25);
        o.scale = static_cast<float>(scale) == 0.0f ? 0.25 : scale;
    }
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) o.dropout_p = in.ConsumeProbability<double>() * 0.8, o.seed = in.ConsumeIntegral<std::uint32_t>();

    xt::xarray<float> q = xt::xarray<float>::from_shape({B, Hkv * group, L, E});
    xt::xarray<float> k = xt::xarray<float>::from_shape({B, Hkv, S, E});
    xt::xarray<float> v = xt::xarray<float>::from_shape({B, Hkv, S, Ev});
    for (auto* t : {&q, &k, &v})
        for (float& x : *t) x = value(in, extreme);
    // Masks broadcast from (L, S) or (B, 1, 1, S).
    const bool per_batch = in.ConsumeBool();
    const xattn::Shape mshape = per_batch ? xattn::Shape{B, 1, 1, S} : xattn::Shape{L, S};
    if (mode == 2) {
        xt::xarray<bool> m = xt::xarray<bool>::from_shape(mshape);
        for (auto&& b : m) b = in.ConsumeIntegralInRange<int>(0, 3) != 0;
        o.attn_mask = xattn::Mask::boolean(m);
    } else if (mode == 3) {
        xt::xarray<float> m = xt::xarray<float>::from_shape(mshape);
        for (float& x : m) x = in.ConsumeIntegralInRange<int>(0, 4) == 0 ? -std::numeric_limits<float>::infinity() : value(in, extreme);
        o.attn_mask = xattn::Mask::additive(m);
    }

    fuzz::rules(in, B, Hkv * group, L, S, o);
    o.return_scores = static_cast<xattn::ScoresStage>(in.ConsumeIntegralInRange<int>(0, 3));

    const auto got = xattn::scaled_dot_product_attention(q, k, v, o);
    const double max_weight = 1.0 / (1.0 - o.dropout_p) * (1.0 + 1e-5);
    for (float w : got.weights) FUZZ_CHECK(std::isnan(w) || (w >= 0.0f && w <= max_weight), "weight %g", w);

    if (!extreme) {
        const auto want = xattn::reference_sdpa(q, k, v, o);
        for (std::size_t i = 0; i < want.output.size(); ++i) {
            const double g = got.output.data()[i], w = want.output.data()[i];
            FUZZ_CHECK(fuzz::within(g, w), "output %zu: %g vs reference %g", i, g, w);
        }
        for (std::size_t i = 0; i < want.weights.size(); ++i) {
            const double g = got.weights.data()[i], w = want.weights.data()[i];
            FUZZ_CHECK(fuzz::within(g, w), "weight %zu: %g vs reference %g", i, g, w);
        }
        for (std::size_t i = 0; i < want.scores.size(); ++i) {
            const double g = got.scores.data()[i], w = want.scores.data()[i];
            FUZZ_CHECK(g == w || fuzz::within(g, w), "score %zu: %g vs reference %g", i, g, w);  // -inf equal
        }
    }

    // Rows left without any key by a boolean mask or the causal rule are exactly zero, whatever the values.
    const std::size_t H = Hkv * group;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < L; ++i) {
                bool any = false;
                for (std::size_t j = 0; j < S && !any; ++j) {
                    bool visible = fuzz::rule_visible(o, b, L, S, i, j);
                    if (mode == 2) visible = visible && o.attn_mask.bools.data()[per_batch ? b * S + j : i * S + j];
                    if (mode == 3) visible = true;  // a float mask's -inf may meet a +inf score: not structural
                    any = visible;
                }
                if (any) continue;
                for (std::size_t c = 0; c < Ev; ++c) FUZZ_CHECK(got.output(b, h, i, c) == 0.0f, "masked row output");
                for (std::size_t j = 0; j < S; ++j) FUZZ_CHECK(got.weights(b, h, i, j) == 0.0f, "masked row weight");
            }
    return 0;
}
