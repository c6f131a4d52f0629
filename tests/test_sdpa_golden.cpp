// scaled_dot_product_attention against PyTorch-made fixtures (tests/golden/sdpa.txt).
#include <doctest/doctest.h>

#include <cmath>

#include "golden.hpp"

namespace {

struct Run {
    const golden::Case& fixture;
    xattn::AttentionResult api, reference;
};

// Runs a fixture through the API and the float64 reference; both must match PyTorch.
Run run_and_check(const std::string& name) {
    const golden::Case& c = golden::find("sdpa.txt", name);
    const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
    const xattn::SdpaOptions options = golden::sdpa_options(c);
    Run run{c, xattn::scaled_dot_product_attention(q, k, v, options), xattn::reference_sdpa(q, k, v, options)};
    CHECK_CLOSE(run.api.output, c.at("output"), name + " output");
    CHECK_CLOSE(run.reference.output, c.at("output"), name + " reference output");
    if (c.has("weights")) {
        CHECK_CLOSE(run.api.weights, c.at("weights"), name + " weights");
        CHECK_CLOSE(run.reference.weights, c.at("weights"), name + " reference weights");
    } else {
        CHECK_MESSAGE(run.api.weights.size() == 0, name << ": weights returned without need_weights");
    }
    return run;
}

xattn::Shape shape_of(const xt::xarray<float>& a) { return xattn::Shape(a.shape().begin(), a.shape().end()); }

}  // namespace

TEST_CASE("every sdpa fixture matches PyTorch, through the API and the reference") {
    const auto& all = golden::cases("sdpa.txt");
    REQUIRE(all.size() >= 30);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        run_and_check(c.name);
    }
}

TEST_CASE("the lesson's example: Q, K, V of (4, 10, 64) give weights (4, 10, 10) and output (4, 10, 64)") {
    const Run run = run_and_check("lesson_example_4x10x64");
    CHECK(shape_of(run.api.weights) == xattn::Shape{4, 10, 10});
    CHECK(shape_of(run.api.output) == xattn::Shape{4, 10, 64});
}

TEST_CASE("the lesson's quiz: (8,128,32)·(8,128,32)ᵀ weights applied to (8,128,64) give (8, 128, 64)") {
    const Run run = run_and_check("lesson_quiz_8x128x32_value_64");
    CHECK(xattn::shape_to_string(shape_of(run.api.output)) == "(8, 128, 64)");
}

TEST_CASE("unbatched 2-D inputs give a 2-D output") {
    const Run run = run_and_check("unbatched_2d");
    CHECK(shape_of(run.api.output) == xattn::Shape{5, 3});
    CHECK(shape_of(run.api.weights) == xattn::Shape{5, 9});
}

TEST_CASE("4-D and 5-D inputs keep their leading dims") {
    CHECK(shape_of(run_and_check("rank4_batch_heads").api.output) == xattn::Shape{2, 3, 5, 4});
    CHECK(shape_of(run_and_check("rank5").api.output) == xattn::Shape{2, 2, 2, 3, 6});
}

TEST_CASE("L != S and Ev != E") {
    CHECK(shape_of(run_and_check("L_lt_S_and_Ev_ne_E").api.output) == xattn::Shape{3, 4, 5});
    CHECK(shape_of(run_and_check("L_gt_S").api.weights) == xattn::Shape{2, 9, 3});
}

TEST_CASE("a boolean mask (true = attend) broadcasts from (L, S), (B, 1, 1, S), (H, 1, S) and the full shape") {
    for (const char* name : {"bool_mask_L_S", "bool_mask_B_1_1_S", "bool_mask_H_1_S", "bool_mask_full_shape"}) {
        INFO(name);
        const Run run = run_and_check(name);
        // Every forbidden position has weight exactly 0.
        const auto allowed = xt::broadcast(run.fixture.at("attn_mask").boolean(), run.api.weights.shape());
        CHECK(xt::all(xt::equal(xt::where(allowed, 0.0f, run.api.weights), 0.0f)));
    }
}

TEST_CASE("a float mask is added to the scaled scores, -inf entries included") {
    for (const char* name : {"float_mask_L_S", "float_mask_full_shape_with_neg_inf", "float_mask_1_L_1"}) {
        INFO(name);
        run_and_check(name);
    }
    const Run run = run_and_check("float_mask_full_shape_with_neg_inf");
    CHECK(run.api.weights(0, 1, 2) == 0.0f);
}

TEST_CASE("is_causal top-left: query i sees keys j <= i, also when L != S") {
    for (const char* name : {"causal_square", "causal_L_lt_S_top_left", "causal_L_gt_S_top_left", "causal_rank4"}) {
        INFO(name);
        const Run run = run_and_check(name);
        const auto& w = run.api.weights;
        const std::size_t L = w.shape()[w.dimension() - 2], S = w.shape()[w.dimension() - 1];
        auto rows = xt::reshape_view(w, {w.size() / (L * S), L, S});
        for (std::size_t b = 0; b < rows.shape()[0]; ++b)
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = i + 1; j < S; ++j) CHECK(rows(b, i, j) == 0.0f);
    }
}

TEST_CASE("is_causal bottom-right: query i sees keys j <= i + S - L") {
    for (const char* name : {"causal_square_bottom_right", "causal_L_lt_S_bottom_right", "causal_L_gt_S_bottom_right",
                             "e64_l33_s65"}) {
        INFO(name);
        const Run run = run_and_check(name);
        const auto& w = run.api.weights;
        const long L = static_cast<long>(w.shape()[1]), S = static_cast<long>(w.shape()[2]);
        for (std::size_t b = 0; b < w.shape()[0]; ++b)
            for (long i = 0; i < L; ++i)
                for (long j = std::max(0L, i + S - L + 1); j < S; ++j) CHECK(w(b, i, j) == 0.0f);
    }
}

TEST_CASE("bottom-right causal with L > S: the first L - S queries see no key and give zeros") {
    const Run run = run_and_check("causal_L_gt_S_bottom_right");  // L = 7, S = 4
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 3; ++i) {
            CHECK(xt::all(xt::equal(xt::view(run.api.weights, b, i), 0.0f)));
            CHECK(xt::all(xt::equal(xt::view(run.api.output, b, i), 0.0f)));
        }
    CHECK(xt::sum(xt::view(run.api.weights, 0, 3))() == doctest::Approx(1.0));
}

TEST_CASE("scale: custom, negative and large values") {
    for (const char* name : {"custom_scale", "negative_scale", "large_scale"}) {
        INFO(name);
        run_and_check(name);
    }
}

TEST_CASE("enable_gqa: query head h reads key/value head h / (Hq / Hkv)") {
    for (const char* name : {"gqa_6_heads_over_2", "gqa_4_heads_over_1_causal", "gqa_equal_heads", "gqa_with_bool_mask"}) {
        INFO(name);
        run_and_check(name);
    }
    CHECK(shape_of(run_and_check("gqa_6_heads_over_2").api.output) == xattn::Shape{2, 6, 5, 4});
}

TEST_CASE("fully masked rows give weights 0 and output 0, never NaN") {
    const Run b = run_and_check("fully_masked_rows_bool");
    for (std::size_t batch = 0; batch < 2; ++batch)
        for (std::size_t row : {1, 3}) {
            CHECK(xt::all(xt::equal(xt::view(b.api.weights, batch, row), 0.0f)));
            CHECK(xt::all(xt::equal(xt::view(b.api.output, batch, row), 0.0f)));
        }
    const Run f = run_and_check("fully_masked_row_float_neg_inf");
    CHECK(xt::all(xt::equal(xt::view(f.api.output, xt::all(), 2), 0.0f)));
    CHECK_FALSE(xt::any(xt::isnan(f.api.output)));
}

TEST_CASE("logits of +-1e4 give the float64 answer (the softmax subtracts the row max)") {
    const Run run = run_and_check("large_logits_1e4");
    CHECK_FALSE(xt::any(xt::isnan(run.api.weights)));
    CHECK(run.api.weights(0, 2) == doctest::Approx(1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0))).epsilon(1e-6));
    run_and_check("saturating_inputs_x10");
}

TEST_CASE("awkward sizes: 1x1x1, odd sizes, SIMD width +-1, a single key, E = 1") {
    for (const char* name : {"one_by_one_by_one", "odd_sizes_with_float_mask", "simd_width_edges", "single_key", "E_1"}) {
        INFO(name);
        run_and_check(name);
    }
    CHECK(run_and_check("one_by_one_by_one").api.weights(0, 0, 0) == 1.0f);
}
