// float16 input and output (IEEE halves as uint16, as JS's Uint16Array and Float16Array hold them): every uint16
// entry point computes what its float32 twin computes on the widened inputs, and rounds the results to nearest
// even, bit for bit: SDPA forward (weights, scores, rules) and backward, the KV cache's append and attend, rotary
// embeddings.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "golden.hpp"
#include "kernels/half.hpp"
#include "kernels/kernels.hpp"
#include "random_inputs.hpp"

namespace {

using xattn::Shape;
using test_inputs::randn;

Shape shape_of(const xt::xarray<float>& a) { return Shape(a.shape().begin(), a.shape().end()); }

std::vector<std::uint16_t> halves(const xt::xarray<float>& x) {
    std::vector<std::uint16_t> h(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) h[i] = xattn::kernels::float_to_half(x.data()[i]);
    return h;
}

// x rounded to halves and widened back: what a float16 input holds.
xt::xarray<float> as_half(xt::xarray<float> x) {
    for (float& f : x) f = xattn::kernels::half_to_float(xattn::kernels::float_to_half(f));
    return x;
}

bool rounds_to(const std::vector<std::uint16_t>& got, const xt::xarray<float>& want) {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != xattn::kernels::float_to_half(want.data()[i])) return false;
    return true;
}

}  // namespace

TEST_CASE("float16 I/O: SDPA forward and backward give the float32 call's results, rounded") {
    for (const char* name : {"all_rules_gqa", "scores_biased", "window_across_tiles_130"}) {
        const golden::Case& c = golden::find("sdpa_rules.txt", name);
        const auto q = as_half(c.at("query").f32()), k = as_half(c.at("key").f32()), v = as_half(c.at("value").f32());
        xattn::SdpaOptions o = golden::sdpa_options(c);
        o.need_weights = true;
        const auto want = xattn::scaled_dot_product_attention(q, k, v, o);
        o.float16_io = true;
        const xattn::MaskRef mask = o.attn_mask.ref();
        xattn::SdpaPlan plan;
        REQUIRE(xattn::plan_sdpa(shape_of(q), shape_of(k), shape_of(v), mask.kind, mask.shape, o, &plan).ok());
        const auto hq = halves(q), hk = halves(k), hv = halves(v);
        std::vector<std::uint16_t> out(xattn::numel(plan.output_shape)), weights(xattn::numel(plan.weights_shape));
        std::vector<std::uint16_t> scores(o.return_scores != xattn::ScoresStage::none ? weights.size() : 0);
        std::vector<unsigned char> ws = xattn::kernels::allocate_workspace(plan.workspace_bytes);
        xattn::run_sdpa(plan, hq.data(), hk.data(), hv.data(), mask, out.data(), weights.data(), ws.data(),
                        scores.empty() ? nullptr : scores.data());
        CHECK_MESSAGE(rounds_to(out, want.output), name);
        CHECK_MESSAGE(rounds_to(weights, want.weights), name);
        if (!scores.empty()) CHECK_MESSAGE(rounds_to(scores, want.scores), name);
    }
    const golden::Case& c = golden::find("sdpa_rules_grad.txt", "all_rules_dropout");
    const auto q = as_half(c.at("query").f32()), k = as_half(c.at("key").f32()), v = as_half(c.at("value").f32());
    const auto dO = as_half(c.at("grad_output").f32());
    xattn::SdpaOptions o = golden::sdpa_options(c);
    o.need_weights = true;  // the forward's weights, from the same run
    const auto want = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
    o.float16_io = true;
    const xattn::MaskRef mask = o.attn_mask.ref();
    xattn::SdpaPlan plan;
    REQUIRE(xattn::plan_sdpa_backward(shape_of(q), shape_of(k), shape_of(v), shape_of(dO), mask.kind, mask.shape, o, &plan).ok());
    const auto hq = halves(q), hk = halves(k), hv = halves(v), hd = halves(dO);
    std::vector<std::uint16_t> out(hd.size()), dq(hq.size()), dk(hk.size()), dv(hv.size());
    std::vector<std::uint16_t> weights(xattn::numel(plan.weights_shape));
    std::vector<unsigned char> ws = xattn::kernels::allocate_workspace(plan.workspace_bytes);
    xattn::run_sdpa_backward(plan, hq.data(), hk.data(), hv.data(), mask, hd.data(), out.data(), dq.data(), dk.data(),
                             dv.data(), weights.data(), ws.data());
    CHECK(rounds_to(out, want.output));
    CHECK(rounds_to(weights, want.weights));
    CHECK(rounds_to(dq, want.grad_query));
    CHECK(rounds_to(dk, want.grad_key));
    CHECK(rounds_to(dv, want.grad_value));
}

TEST_CASE("float16 I/O: the KV cache appends halves and attends with them as the float32 calls do") {
    for (bool rolling : {false, true}) {
        xattn::KvCacheConfig cfg;
        cfg.batch = 2, cfg.kv_heads = 2, cfg.head_dim = 16, cfg.value_dim = 8, cfg.capacity = rolling ? 90 : 130;
        cfg.rolling = rolling;
        cfg.rotary = xattn::RotaryEmbedding{};
        xattn::KvCache floats(cfg), halved(cfg);
        for (std::size_t step = 0; step < 3; ++step) {
            const auto k = as_half(randn({2, 2, 40, 16}, 10 + step)), v = as_half(randn({2, 2, 40, 8}, 20 + step));
            const std::vector<std::int32_t> counts{40, static_cast<std::int32_t>(10 * step)};
            floats.append(k, v, counts);
            const auto hk = halves(k), hv = halves(v);
            REQUIRE(halved.append(shape_of(k), hk.data(), shape_of(v), hv.data(), counts.data()).ok());
        }
        CHECK(xt::all(xt::equal(floats.keys(), halved.keys())));
        const auto q = as_half(randn({2, 4, 2, 16}, 30));
        xattn::KvAttendOptions o;
        o.is_causal = true, o.window = {50, -1}, o.need_weights = true;
        const auto want = floats.attend(q, o);
        o.float16_io = true;
        xattn::KvAttendPlan plan;
        REQUIRE(halved.plan_attend(shape_of(q), xattn::MaskKind::none, {}, o, &plan).ok());
        const auto hq = halves(q);
        std::vector<std::uint16_t> out(xattn::numel(plan.output_shape)), weights(xattn::numel(plan.weights_shape));
        std::vector<unsigned char> ws = xattn::kernels::allocate_workspace(plan.workspace_bytes);
        halved.run_attend(plan, hq.data(), {}, out.data(), weights.data(), ws.data());
        CHECK(rounds_to(out, want.output));
        CHECK(rounds_to(weights, want.weights));
    }
}

TEST_CASE("float16 I/O: rotary embeddings turn halves as floats, forward and backward") {
    const golden::Case& c = golden::find("rotary.txt", "positions_per_batch_element");
    const auto x = as_half(c.at("x").f32());
    xattn::RotarySettings s;
    for (double p : c.at("positions").values) s.positions.push_back(static_cast<std::int64_t>(p));
    xattn::RotaryPlan plan;
    REQUIRE(xattn::plan_rotary(shape_of(x), s, &plan).ok());
    auto h = halves(x);
    xattn::run_rotary(plan, h.data(), h.data());  // in place
    CHECK(rounds_to(h, xattn::apply_rotary_embedding(x, s)));
    auto g = halves(x);
    xattn::run_rotary_backward(plan, g.data(), g.data());
    CHECK(rounds_to(g, xattn::apply_rotary_embedding_backward(x, s)));
}
