// multi_head_attention against torch.nn.MultiheadAttention (tests/golden/mha.txt).
#include <doctest/doctest.h>

#include "golden.hpp"

namespace {

xattn::AttentionResult run_and_check(const std::string& name) {
    const golden::Case& c = golden::find("mha.txt", name);
    const xattn::MultiheadAttention mha = golden::make_mha(c);
    const auto result = mha.forward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(), golden::mha_options(c));
    CHECK_CLOSE(result.output, c.at("output"), name + " output");
    if (c.has("weights"))
        CHECK_CLOSE(result.weights, c.at("weights"), name + " weights");
    else
        CHECK_MESSAGE(result.weights.size() == 0, name << ": weights returned without need_weights");
    return result;
}

xattn::Shape shape_of(const xt::xarray<float>& a) { return xattn::Shape(a.shape().begin(), a.shape().end()); }

}  // namespace

TEST_CASE("every mha fixture matches torch.nn.MultiheadAttention loaded with the same state dict") {
    const auto& all = golden::cases("mha.txt");
    REQUIRE(all.size() >= 15);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        run_and_check(c.name);
    }
}

TEST_CASE("layouts: (L, N, E) by default, (N, L, E) with batch_first, (L, E) unbatched") {
    CHECK(shape_of(run_and_check("self_attention_seq_first").output) == xattn::Shape{5, 3, 8});
    CHECK(shape_of(run_and_check("self_attention_seq_first").weights) == xattn::Shape{3, 5, 5});
    CHECK(shape_of(run_and_check("cross_attention_batch_first").output) == xattn::Shape{2, 4, 12});
    CHECK(shape_of(run_and_check("cross_attention_batch_first").weights) == xattn::Shape{2, 4, 6});
    CHECK(shape_of(run_and_check("unbatched").output) == xattn::Shape{5, 8});
    CHECK(shape_of(run_and_check("unbatched").weights) == xattn::Shape{5, 7});
}

TEST_CASE("kdim and vdim use separate q/k/v projection weights") {
    const golden::Case& c = golden::find("mha.txt", "kdim_vdim");
    CHECK(c.has("param:q_proj_weight"));
    CHECK_FALSE(c.has("param:in_proj_weight"));
    run_and_check("kdim_vdim");
    run_and_check("kdim_vdim_batch_first_no_bias");
}

TEST_CASE("bias = false drops in_proj_bias and out_proj.bias") {
    const xattn::MultiheadAttention mha = golden::make_mha(golden::find("mha.txt", "no_bias"));
    CHECK(mha.find_parameter("in_proj_bias") == nullptr);
    run_and_check("no_bias");
}

TEST_CASE("key_padding_mask (N, S): bool true ignores the key, float is added") {
    const auto r = run_and_check("key_padding_mask_bool");
    // Batch element 0 ignores keys 4 and 5; element 1 ignores key 1.
    CHECK(xt::all(xt::equal(xt::view(r.weights, 0, xt::all(), xt::range(4, 6)), 0.0f)));
    CHECK(xt::all(xt::equal(xt::view(r.weights, 1, xt::all(), 1), 0.0f)));
    run_and_check("key_padding_mask_float");
}

TEST_CASE("attn_mask: bool (L, S) with true = not allowed, float (N·H, L, S) added, and both masks merged") {
    const golden::Case& c = golden::find("mha.txt", "attn_mask_bool_L_S");
    const auto r = run_and_check("attn_mask_bool_L_S");
    const auto forbidden = c.at("attn_mask").boolean();
    for (std::size_t n = 0; n < 2; ++n)
        CHECK(xt::all(xt::equal(xt::where(forbidden, xt::view(r.weights, n), 0.0f), 0.0f)));
    run_and_check("attn_mask_float_per_head");
    run_and_check("attn_mask_and_key_padding_bool");
}

TEST_CASE("average_attn_weights = false returns per-head weights (N, H, L, S)") {
    CHECK(shape_of(run_and_check("per_head_weights").weights) == xattn::Shape{2, 3, 4, 5});
}

TEST_CASE("add_bias_kv and add_zero_attn append one key each, never masked") {
    CHECK(shape_of(run_and_check("add_bias_kv").weights) == xattn::Shape{2, 4, 6});
    CHECK(shape_of(run_and_check("add_zero_attn").weights) == xattn::Shape{2, 4, 6});
    CHECK(shape_of(run_and_check("bias_kv_zero_attn_with_masks").weights) == xattn::Shape{2, 4, 7});
}

TEST_CASE("is_causal builds the causal mask when no attn_mask is given") {
    const auto r = run_and_check("is_causal");
    for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = i + 1; j < 6; ++j) CHECK(xt::all(xt::equal(xt::view(r.weights, xt::all(), i, j), 0.0f)));
    run_and_check("is_causal_batch_first_per_head");
}

TEST_CASE("need_weights = false returns no weights") {
    CHECK(run_and_check("need_weights_false").weights.size() == 0);
}

TEST_CASE("unbatched inputs take a (S,) key_padding_mask and an (H, L, S) attn_mask") {
    run_and_check("unbatched_with_masks");
}

TEST_CASE("a fully masked batch element gives zero weights and out_proj.bias as output (torch: NaN)") {
    const golden::Case& c = golden::find("mha.txt", "fully_masked_batch_element");
    const auto r = run_and_check("fully_masked_batch_element");
    CHECK(xt::all(xt::equal(xt::view(r.weights, 0), 0.0f)));
    const auto bias = c.at("param:out_proj.bias").f32();
    for (std::size_t l = 0; l < 3; ++l) CHECK(xt::allclose(xt::view(r.output, l, 0), bias));
    CHECK_FALSE(xt::any(xt::isnan(r.output)));
}

TEST_CASE("a wider model: embed_dim 64, 8 heads") {
    run_and_check("wide_64_8_heads");
}
