// Properties that hold for any input: the row kernel agrees with the float64 reference over awkward
// sizes, weights are distributions, masks broadcast like their expansion, dropout is a pure function
// of the seed, NaN stays in the rows it reaches, zero-size dims give empty or zero results.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xsort.hpp>

#include "golden.hpp"
#include "random_inputs.hpp"

namespace {

using xattn::Shape;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using test_inputs::randn;
using test_inputs::rand_bool;

// The API (row kernel) and the reference agree to the golden tolerance.
void check_against_reference(const xt::xarray<float>& q, const xt::xarray<float>& k, const xt::xarray<float>& v,
                             xattn::SdpaOptions o, const std::string& label) {
    o.need_weights = true;
    const auto got = xattn::scaled_dot_product_attention(q, k, v, o);
    const auto want = xattn::reference_sdpa(q, k, v, o);
    CHECK_CLOSE(got.output, want.output, label + " output");
    CHECK_CLOSE(got.weights, want.weights, label + " weights");
}

}  // namespace

TEST_CASE("the row kernel agrees with the reference over awkward sizes, masks and causal rules") {
    unsigned seed = 1;
    for (std::size_t L : {1, 3, 4, 5, 8, 9, 17})
        for (std::size_t S : {1, 2, 4, 7, 16, 33})
            for (std::size_t E : {1, 3, 4, 5, 16}) {
                const std::size_t Ev = (E * 3 + L) % 9 + 1;
                const auto q = randn({2, L, E}, seed++), k = randn({2, S, E}, seed++), v = randn({2, S, Ev}, seed++);
                const std::string label = "L=" + std::to_string(L) + " S=" + std::to_string(S) + " E=" + std::to_string(E);
                xattn::SdpaOptions o;
                check_against_reference(q, k, v, o, label);
                o.is_causal = true;
                check_against_reference(q, k, v, o, label + " causal top-left");
                o.causal_alignment = xattn::CausalAlignment::bottom_right;
                check_against_reference(q, k, v, o, label + " causal bottom-right");
                o = {};
                o.attn_mask = xattn::Mask::boolean(rand_bool({L, S}, 0.6, seed++));
                check_against_reference(q, k, v, o, label + " bool mask");
                o.attn_mask = xattn::Mask::additive(randn({2, L, S}, seed++));
                check_against_reference(q, k, v, o, label + " float mask");
            }
}

TEST_CASE("every unmasked weight row is a distribution: non-negative, summing to 1") {
    const auto q = randn({3, 2, 7, 5}, 11), k = randn({3, 2, 9, 5}, 12), v = randn({3, 2, 9, 4}, 13);
    xattn::SdpaOptions o;
    o.need_weights = true;
    const auto w = xattn::scaled_dot_product_attention(q, k, v, o).weights;  // (3, 2, 7, 9)
    CHECK(xt::all(w >= 0.0f));
    CHECK(xt::allclose(xt::sum(w, {3}), 1.0f, 1e-6, 1e-6));
}

TEST_CASE("a 2-D mask gives the same result as the same mask expanded to the full shape") {
    const auto q = randn({2, 3, 5, 8}, 21), k = randn({2, 3, 6, 8}, 22), v = randn({2, 3, 6, 4}, 23);
    const Shape full{2, 3, 5, 6};
    xattn::SdpaOptions small, expanded;
    small.need_weights = expanded.need_weights = true;
    const xt::xarray<bool> bm = rand_bool({5, 6}, 0.6, 24);
    small.attn_mask = xattn::Mask::boolean(bm);
    expanded.attn_mask = xattn::Mask::boolean(xt::xarray<bool>(xt::broadcast(bm, full)));
    auto a = xattn::scaled_dot_product_attention(q, k, v, small), b = xattn::scaled_dot_product_attention(q, k, v, expanded);
    CHECK(a.output == b.output);
    CHECK(a.weights == b.weights);
    const xt::xarray<float> fm = randn({1, 6}, 25);
    small.attn_mask = xattn::Mask::additive(fm);
    expanded.attn_mask = xattn::Mask::additive(xt::xarray<float>(xt::broadcast(fm, full)));
    a = xattn::scaled_dot_product_attention(q, k, v, small), b = xattn::scaled_dot_product_attention(q, k, v, expanded);
    CHECK(a.output == b.output);
    CHECK(a.weights == b.weights);
}

TEST_CASE("is_causal equals the explicit lower-triangular boolean mask of its alignment") {
    const auto q = randn({2, 5, 4}, 31), k = randn({2, 8, 4}, 32), v = randn({2, 8, 3}, 33);
    for (auto alignment : {xattn::CausalAlignment::top_left, xattn::CausalAlignment::bottom_right}) {
        xattn::SdpaOptions causal, masked;
        causal.is_causal = true;
        causal.causal_alignment = alignment;
        const int shift = alignment == xattn::CausalAlignment::top_left ? 0 : 8 - 5;
        xt::xarray<bool> tri = xt::zeros<bool>({5, 8});
        for (int i = 0; i < 5; ++i)
            for (int j = 0; j < 8; ++j) tri(i, j) = j <= i + shift;
        masked.attn_mask = xattn::Mask::boolean(tri);
        CHECK(xattn::scaled_dot_product_attention(q, k, v, causal).output ==
              xattn::scaled_dot_product_attention(q, k, v, masked).output);
    }
}

TEST_CASE("enable_gqa equals repeating each key/value head Hq/Hkv times") {
    const auto q = randn({2, 6, 4, 8}, 41), k = randn({2, 2, 5, 8}, 42), v = randn({2, 2, 5, 3}, 43);
    xattn::SdpaOptions gqa;
    gqa.enable_gqa = true;
    xt::xarray<float> k_rep = xt::zeros<float>({2, 6, 5, 8}), v_rep = xt::zeros<float>({2, 6, 5, 3});
    for (std::size_t h = 0; h < 6; ++h) {
        xt::view(k_rep, xt::all(), h) = xt::view(k, xt::all(), h / 3);
        xt::view(v_rep, xt::all(), h) = xt::view(v, xt::all(), h / 3);
    }
    CHECK(xattn::scaled_dot_product_attention(q, k, v, gqa).output ==
          xattn::scaled_dot_product_attention(q, k_rep, v_rep).output);
}

TEST_CASE("dropout is a pure function of the seed, scales kept weights by 1/(1-p) and drops about p") {
    const auto q = randn({4, 32, 8}, 51), k = randn({4, 48, 8}, 52), v = randn({4, 48, 6}, 53);
    xattn::SdpaOptions plain, drop;
    plain.need_weights = drop.need_weights = true;
    drop.dropout_p = 0.25;
    drop.seed = 1234;
    const auto base = xattn::scaled_dot_product_attention(q, k, v, plain);
    const auto a = xattn::scaled_dot_product_attention(q, k, v, drop);
    const auto b = xattn::scaled_dot_product_attention(q, k, v, drop);
    CHECK(a.output == b.output);
    CHECK(a.weights == b.weights);

    std::size_t dropped = 0;
    for (std::size_t i = 0; i < a.weights.size(); ++i) {
        if (a.weights.data()[i] == 0.0f) {
            ++dropped;
        } else {
            CHECK(a.weights.data()[i] == doctest::Approx(base.weights.data()[i] / 0.75f).epsilon(1e-6));
        }
    }
    const double n = static_cast<double>(a.weights.size()), expected = 0.25 * n, sigma = std::sqrt(n * 0.25 * 0.75);
    CHECK(std::fabs(static_cast<double>(dropped) - expected) < 5 * sigma);

    // The same decisions in the reference, so its output with dropout agrees too.
    const auto ref = xattn::reference_sdpa(q, k, v, drop);
    CHECK_CLOSE(a.output, ref.output, "dropout output vs reference");
    CHECK_CLOSE(a.weights, ref.weights, "dropout weights vs reference");

    drop.seed = 1235;
    CHECK_FALSE(xattn::scaled_dot_product_attention(q, k, v, drop).weights == a.weights);
    drop.dropout_p = 0.0;
    CHECK(xattn::scaled_dot_product_attention(q, k, v, drop).output == base.output);
}

TEST_CASE("a NaN in query row i reaches only output row i") {
    auto q = randn({1, 4, 5}, 61);
    const auto k = randn({1, 6, 5}, 62), v = randn({1, 6, 3}, 63);
    q(0, 2, 1) = kNaN;
    const auto out = xattn::scaled_dot_product_attention(q, k, v).output;
    for (std::size_t i = 0; i < 4; ++i)
        CHECK(xt::any(xt::isnan(xt::view(out, 0, i))) == (i == 2));
}

TEST_CASE("a NaN in a key reaches exactly the queries that may see it") {
    const auto q = randn({1, 4, 5}, 64), v = randn({1, 4, 3}, 66);
    auto k = randn({1, 4, 5}, 65);
    k(0, 2, 0) = kNaN;
    xattn::SdpaOptions causal;
    causal.is_causal = true;  // key 2 is visible to queries 2 and 3 only
    const auto out = xattn::scaled_dot_product_attention(q, k, v, causal).output;
    for (std::size_t i = 0; i < 4; ++i) CHECK(xt::any(xt::isnan(xt::view(out, 0, i))) == (i >= 2));
    const auto ref = xattn::reference_sdpa(q, k, v, causal).output;
    for (std::size_t i = 0; i < 4; ++i) CHECK(xt::any(xt::isnan(xt::view(ref, 0, i))) == (i >= 2));
}

TEST_CASE("huge values at masked positions and -inf masks do not leak into the result") {
    const auto q = randn({1, 3, 4}, 71);
    auto k = randn({1, 5, 4}, 72), v = randn({1, 5, 2}, 73);
    k(0, 4, 0) = 1e10f;
    v(0, 4, 1) = kInf;
    xt::xarray<bool> allowed = xt::ones<bool>({3, 5});
    xt::view(allowed, xt::all(), 4) = false;
    xattn::SdpaOptions o;
    o.need_weights = true;
    o.attn_mask = xattn::Mask::boolean(allowed);
    const auto masked = xattn::scaled_dot_product_attention(q, k, v, o);
    const auto trimmed = xattn::scaled_dot_product_attention(xt::xarray<float>(q), xt::xarray<float>(xt::view(k, xt::all(), xt::range(0, 4))),
                                                             xt::xarray<float>(xt::view(v, xt::all(), xt::range(0, 4))));
    CHECK_CLOSE(masked.output, trimmed.output, "masked key equals removed key");
    xt::xarray<float> bias = xt::zeros<float>({5});
    bias(4) = -kInf;
    o.attn_mask = xattn::Mask::additive(bias);
    CHECK_CLOSE(xattn::scaled_dot_product_attention(q, k, v, o).output, trimmed.output, "-inf float mask");
}

TEST_CASE("subnormal inputs compute like any other small number") {
    const float tiny = std::numeric_limits<float>::denorm_min() * 64;
    const xt::xarray<float> q = xt::full_like(randn({1, 2, 3}, 81), tiny), k = randn({1, 4, 3}, 82), v = randn({1, 4, 2}, 83);
    const auto out = xattn::scaled_dot_product_attention(q, k, v).output;
    // Scores are ~0, so every query averages the values.
    for (std::size_t i = 0; i < 2; ++i)
        CHECK(xt::allclose(xt::view(out, 0, i), xt::mean(xt::view(v, 0), {0}), 1e-5, 1e-6));
}

TEST_CASE("zero-size dims: empty results, and zeros when S = 0") {
    auto run = [](const Shape& q, const Shape& k, const Shape& v) {
        xattn::SdpaOptions o;
        o.need_weights = true;
        return xattn::scaled_dot_product_attention(xt::zeros<float>(q), xt::ones<float>(k), xt::ones<float>(v), o);
    };
    auto r = run({0, 3, 4}, {0, 5, 4}, {0, 5, 2});
    CHECK(r.output.size() == 0);
    CHECK(r.output.shape()[2] == 2);
    r = run({2, 0, 4}, {2, 5, 4}, {2, 5, 2});
    CHECK(r.output.size() == 0);
    r = run({2, 3, 4}, {2, 0, 4}, {2, 0, 2});  // no keys: every row is fully masked
    CHECK(r.output.shape() == xt::xarray<float>::shape_type{2, 3, 2});
    CHECK(xt::all(xt::equal(r.output, 0.0f)));
    CHECK(r.weights.size() == 0);
    r = run({2, 3, 0}, {2, 5, 0}, {2, 5, 2});  // E = 0: every score is 0, weights uniform
    CHECK(xt::allclose(r.weights, 0.2f));
    CHECK(xt::allclose(r.output, 1.0f));
    r = run({2, 3, 4}, {2, 5, 4}, {2, 5, 0});
    CHECK(r.output.size() == 0);
    CHECK(r.weights.size() == 30);
}

TEST_CASE("a huge leading dim beside a zero-size dim returns at once (found by fuzzing: it used to loop)") {
    const std::size_t huge = std::size_t{1} << 40;
    auto zeros = [](const Shape& s) { return xt::xarray<float>(xt::zeros<float>(s)); };
    auto ones = [](const Shape& s) { return xt::xarray<float>(xt::ones<float>(s)); };
    xattn::SdpaOptions o;
    o.enable_gqa = true;  // Hq = 2^40 query heads with no rows over one key/value head
    auto r = xattn::scaled_dot_product_attention(zeros({1, huge, 0, 4}), ones({1, 1, 5, 4}),
                                            ones({1, 1, 5, 4}), o);
    CHECK(r.output.size() == 0);
    const auto g = xattn::scaled_dot_product_attention_backward(zeros({1, huge, 0, 4}), ones({1, 1, 5, 4}),
                                                                ones({1, 1, 5, 4}), zeros({1, huge, 0, 4}), o);
    CHECK(xt::all(xt::equal(g.grad_key, 0.0f)));
    // S = 2^40 keys of zero width and no output: nothing is allocated for the keys (found by fuzzing).
    r = xattn::scaled_dot_product_attention(zeros({3, 4, 0}), zeros({3, huge, 0}), zeros({3, huge, 0}));
    CHECK(r.output.shape() == xt::xarray<float>::shape_type{3, 4, 0});
    xattn::SdpaPlan plan;
    REQUIRE(xattn::plan_sdpa({3, 4, 0}, {3, huge, 0}, {3, huge, 0}, xattn::MaskKind::none, {}, {}, &plan).ok());
    xattn::run_sdpa_rows(plan, nullptr, nullptr, nullptr, {}, nullptr, nullptr);
    xattn::MhaConfig c;
    c.embed_dim = 8;
    c.num_heads = 2;
    const xattn::MultiheadAttention mha(c);
    const auto y = mha.forward(zeros({0, huge, 8}), zeros({0, huge, 8}), zeros({0, huge, 8}));
    CHECK(y.output.size() == 0);
    CHECK(y.weights.size() == 0);
}

TEST_CASE("MultiheadAttention: is_causal equals the explicit (L, S) mask, unbatched equals N = 1") {
    xattn::MhaConfig c;
    c.embed_dim = 8;
    c.num_heads = 2;
    c.init_seed = 7;
    const xattn::MultiheadAttention mha(c);
    const auto x = randn({5, 1, 8}, 91);
    xattn::MhaForwardOptions causal, masked;
    causal.is_causal = true;
    xt::xarray<bool> upper = xt::zeros<bool>({5, 5});
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = i + 1; j < 5; ++j) upper(i, j) = true;
    masked.attn_mask = xattn::Mask::boolean(upper);
    const auto a = mha.forward(x, x, x, causal), b = mha.forward(x, x, x, masked);
    CHECK(a.output == b.output);
    CHECK(a.weights == b.weights);
    const xt::xarray<float> x2 = xt::view(x, xt::all(), 0);
    const auto u = mha.forward(x2, x2, x2, causal);
    CHECK_CLOSE(u.output, xt::xarray<float>(xt::view(a.output, xt::all(), 0)), "unbatched output");
    CHECK_CLOSE(u.weights, xt::xarray<float>(xt::view(a.weights, 0)), "unbatched weights");
}

TEST_CASE("MultiheadAttention: batch_first is the transpose of the default layout") {
    xattn::MhaConfig c;
    c.embed_dim = 12;
    c.num_heads = 3;
    c.init_seed = 3;
    const xattn::MultiheadAttention seq_first(c);
    c.batch_first = true;
    const xattn::MultiheadAttention batch_first(c);
    const auto q = randn({4, 2, 12}, 92), kv = randn({6, 2, 12}, 93);
    const auto a = seq_first.forward(q, kv, kv);
    const auto b = batch_first.forward(xt::xarray<float>(xt::transpose(q, {1, 0, 2})),
                                       xt::xarray<float>(xt::transpose(kv, {1, 0, 2})),
                                       xt::xarray<float>(xt::transpose(kv, {1, 0, 2})));
    CHECK(xt::xarray<float>(xt::transpose(b.output, {1, 0, 2})) == a.output);
    CHECK(a.weights == b.weights);
}

TEST_CASE("MultiheadAttention: float key_padding_mask and attn_mask add up") {
    xattn::MhaConfig c;
    c.embed_dim = 8;
    c.num_heads = 2;
    const xattn::MultiheadAttention mha(c);
    const auto q = randn({3, 2, 8}, 94), kv = randn({4, 2, 8}, 95);
    const xt::xarray<float> kpm = randn({2, 4}, 96), am = randn({3, 4}, 97);
    xattn::MhaForwardOptions both, merged;
    both.key_padding_mask = xattn::Mask::additive(kpm);
    both.attn_mask = xattn::Mask::additive(am);
    xt::xarray<float> sum = xt::zeros<float>({4, 3, 4});  // (N·H, L, S)
    for (std::size_t n = 0; n < 2; ++n)
        for (std::size_t h = 0; h < 2; ++h)
            xt::view(sum, n * 2 + h) = am + xt::view(kpm, xt::range(n, n + 1));
    merged.attn_mask = xattn::Mask::additive(sum);
    CHECK_CLOSE(mha.forward(q, kv, kv, both).output, mha.forward(q, kv, kv, merged).output, "merged masks");
}

TEST_CASE("MultiheadAttention: parameters read back in PyTorch's layout") {
    xattn::MhaConfig c;
    c.embed_dim = 4;
    c.num_heads = 2;
    c.add_bias_kv = true;
    xattn::MultiheadAttention mha(c);
    const xt::xarray<float> w = xt::arange<float>(48).reshape({12, 4});
    mha.set_parameter("in_proj_weight", w);
    CHECK(mha.parameter("in_proj_weight") == w);
    CHECK(mha.parameter("bias_k").shape() == xt::xarray<float>::shape_type{1, 1, 4});
    CHECK(mha.parameters().size() == 6);
}
