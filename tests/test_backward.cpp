// The attention backward pass: PyTorch autograd fixtures (tests/golden/sdpa_grad.txt), finite
// differences of the float64 reference, the row kernel against the reference, and refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <xtensor/xbuilder.hpp>

#include "errors.hpp"
#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "random_inputs.hpp"
#include "sdpa_cases.hpp"

namespace {

using xattn::Shape;

void check_fixture(const golden::Case& c) {
    const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
    const auto dO = c.at("grad_output").f32();
    const xattn::SdpaOptions o = golden::sdpa_options(c);
    for (const bool reference : {false, true}) {
        const std::string label = c.name + (reference ? " (reference)" : " (kernel)");
        const auto r = reference ? xattn::reference_sdpa_backward(q, k, v, dO, o)
                                 : xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
        CHECK_GRAD(r.output, c.at("output"), label + " output");
        CHECK_GRAD(r.grad_query, c.at("grad_query"), label + " grad_query");
        CHECK_GRAD(r.grad_key, c.at("grad_key"), label + " grad_key");
        CHECK_GRAD(r.grad_value, c.at("grad_value"), label + " grad_value");
    }
}

using test_inputs::randn;

}  // namespace

TEST_CASE("every gradient fixture matches PyTorch autograd, through the kernel and the reference") {
    const auto& all = golden::cases("sdpa_grad.txt");
    REQUIRE(all.size() >= 15);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        check_fixture(c);
    }
}

TEST_CASE("gradients under GQA sum over the query heads that share a key/value head") {
    const golden::Case& c = golden::find("sdpa_grad.txt", "gqa_6_heads_over_2");
    check_fixture(c);
    // Splitting the 6 query heads into their 2 groups and adding the groups' key gradients gives the same.
    const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32(), dO = c.at("grad_output").f32();
    xt::xarray<float> dk = xt::zeros<float>(k.shape());
    for (std::size_t g = 0; g < 2; ++g) {
        const xt::xarray<float> qg = xt::view(q, xt::all(), xt::range(3 * g, 3 * g + 3));
        const xt::xarray<float> dOg = xt::view(dO, xt::all(), xt::range(3 * g, 3 * g + 3));
        const xt::xarray<float> kg = xt::view(k, xt::all(), xt::range(g, g + 1));
        const xt::xarray<float> vg = xt::view(v, xt::all(), xt::range(g, g + 1));
        xattn::SdpaOptions o;
        o.enable_gqa = true;
        xt::view(dk, xt::all(), xt::range(g, g + 1)) = xattn::scaled_dot_product_attention_backward(qg, kg, vg, dOg, o).grad_key;
    }
    CHECK_GRAD(dk, xattn::scaled_dot_product_attention_backward(q, k, v, dO, golden::sdpa_options(c)).grad_key, "grouped");
}

TEST_CASE("fully masked rows pass gradient 0 to their query, never NaN") {
    const golden::Case& c = golden::find("sdpa_grad.txt", "causal_bottom_right_L_gt_S_fully_masked_rows");
    const auto r = xattn::scaled_dot_product_attention_backward(c.at("query").f32(), c.at("key").f32(),
                                                                c.at("value").f32(), c.at("grad_output").f32(),
                                                                golden::sdpa_options(c));
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 3; ++i) CHECK(xt::all(xt::equal(xt::view(r.grad_query, b, i), 0.0f)));
    CHECK_FALSE(xt::any(xt::isnan(r.grad_key)));
    CHECK_FALSE(xt::any(xt::isnan(r.grad_value)));
}

TEST_CASE("dropout with the same seed drops the same weights in the backward pass") {
    const golden::Case& c = golden::find("sdpa_grad.txt", "dropout_0_3_seed_7");
    check_fixture(c);
    xattn::SdpaOptions o = golden::sdpa_options(c);
    const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32(), dO = c.at("grad_output").f32();
    o.need_weights = false;
    // The backward's output is the forward's output with the same seed.
    CHECK_GRAD(xattn::scaled_dot_product_attention_backward(q, k, v, dO, o).output,
               xattn::scaled_dot_product_attention(q, k, v, o).output, "forward vs backward output");
    o.seed += 1;
    CHECK_FALSE(golden::compare(xattn::scaled_dot_product_attention_backward(q, k, v, dO, o).grad_value,
                                c.at("grad_value"), golden::kGradAtol, golden::kGradRtol).ok);
}

TEST_CASE("finite differences of the float64 reference agree with the analytic gradients") {
    // d/dx Σ (dO ⊙ out(x)) by central differences, for every input element of small random cases.
    struct Setup { Shape q, k, v; bool causal; bool gqa; bool mask; };
    for (const Setup& s : {Setup{{2, 3, 4}, {2, 5, 4}, {2, 5, 3}, false, false, false},
                           Setup{{1, 4, 3}, {1, 4, 3}, {1, 4, 2}, true, false, false},
                           Setup{{1, 4, 2, 3}, {1, 2, 3, 3}, {1, 2, 3, 2}, false, true, true}}) {
        const auto q = randn(s.q, 101), k = randn(s.k, 102), v = randn(s.v, 103);
        xattn::SdpaOptions o;
        o.is_causal = s.causal;
        o.enable_gqa = s.gqa;
        if (s.mask) o.attn_mask = xattn::Mask::additive(randn({s.q[s.q.size() - 2], s.k[s.k.size() - 2]}, 104));
        const auto probe = xattn::scaled_dot_product_attention(q, k, v, o).output;
        const auto dO = randn(Shape(probe.shape().begin(), probe.shape().end()), 105);
        const auto analytic = xattn::reference_sdpa_backward(q, k, v, dO, o);
        const xt::xarray<double> q64 = xt::cast<double>(q), k64 = xt::cast<double>(k), v64 = xt::cast<double>(v);
        const xt::xarray<double> dO64 = xt::cast<double>(dO);
        auto loss = [&](const xt::xarray<double>& a, const xt::xarray<double>& b, const xt::xarray<double>& c) {
            return xt::sum(dO64 * xattn::reference_sdpa_f64(a, b, c, o).output)();
        };
        const double h = 1e-6;
        auto check_input = [&](int which, const xt::xarray<float>& grad) {
            xt::xarray<double> in[3] = {q64, k64, v64};
            for (std::size_t e = 0; e < in[which].size(); ++e) {
                const double x = in[which].data()[e];
                in[which].data()[e] = x + h;
                const double up = loss(in[0], in[1], in[2]);
                in[which].data()[e] = x - h;
                const double down = loss(in[0], in[1], in[2]);
                in[which].data()[e] = x;
                const double numeric = (up - down) / (2 * h);
                CHECK_MESSAGE(std::fabs(grad.data()[e] - numeric) <= 1e-5 + 1e-4 * std::fabs(numeric),
                              "input " << which << " element " << e << ": analytic " << grad.data()[e]
                                       << ", finite difference " << numeric);
            }
        };
        check_input(0, analytic.grad_query);
        check_input(1, analytic.grad_key);
        check_input(2, analytic.grad_value);
    }
}

TEST_CASE("the backward kernel agrees with the reference over awkward sizes, masks and causal rules") {
    unsigned seed = 200;
    for (std::size_t L : {1, 3, 8, 9})
        for (std::size_t S : {1, 4, 7, 17})
            for (std::size_t E : {1, 5, 8, 16}) {
                const std::size_t Ev = (E + L) % 7 + 1;
                const auto q = randn({2, L, E}, seed++), k = randn({2, S, E}, seed++), v = randn({2, S, Ev}, seed++);
                const auto dO = randn({2, L, Ev}, seed++);
                for (int variant = 0; variant < 4; ++variant) {
                    xattn::SdpaOptions o;
                    if (variant == 1) o.is_causal = true;
                    if (variant == 2) {
                        o.is_causal = true;
                        o.causal_alignment = xattn::CausalAlignment::bottom_right;
                    }
                    if (variant == 3) {
                        o.attn_mask = xattn::Mask::additive(randn({L, S}, seed++));
                        o.dropout_p = 0.2;
                        o.seed = seed;
                    }
                    const std::string label = "L=" + std::to_string(L) + " S=" + std::to_string(S) + " E=" +
                                              std::to_string(E) + " variant " + std::to_string(variant);
                    const auto got = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
                    const auto want = xattn::reference_sdpa_backward(q, k, v, dO, o);
                    CHECK_GRAD(got.grad_query, want.grad_query, label + " dQ");
                    CHECK_GRAD(got.grad_key, want.grad_key, label + " dK");
                    CHECK_GRAD(got.grad_value, want.grad_value, label + " dV");
                    CHECK_GRAD(got.output, want.output, label + " output");
                }
            }
}

TEST_CASE("with a NaN input the backward keeps the forward's rule: it reaches only the rows that see it") {
    // Non-finite inputs take the row-at-a-time path; finite ones the blocked path. Both agree with the reference.
    const auto q = randn({1, 4, 3}, 301), v = randn({1, 4, 2}, 303), dO = randn({1, 4, 2}, 304);
    auto k = randn({1, 4, 3}, 302);
    k(0, 3, 1) = std::numeric_limits<float>::quiet_NaN();  // key 3: seen by query 3 only under causal
    xattn::SdpaOptions o;
    o.is_causal = true;
    const auto got = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
    const auto want = xattn::reference_sdpa_backward(q, k, v, dO, o);
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(xt::any(xt::isnan(xt::view(got.grad_query, 0, i))) == (i == 3));
        CHECK(xt::any(xt::isnan(xt::view(want.grad_query, 0, i))) == (i == 3));
    }
    const auto finite = xattn::scaled_dot_product_attention_backward(q, randn({1, 4, 3}, 302), v, dO, o);
    CHECK_GRAD(finite.grad_key, xattn::reference_sdpa_backward(q, randn({1, 4, 3}, 302), v, dO, o).grad_key, "finite");
}

TEST_CASE("refused: a grad_output not shaped like the output, and every forward refusal") {
    const xt::xarray<float> q = xt::zeros<float>({2, 5, 8}), k = xt::zeros<float>({2, 7, 8}), v = xt::zeros<float>({2, 7, 4});
    check_refused([&] { xattn::scaled_dot_product_attention_backward(q, k, v, xt::zeros<float>({2, 5, 8})); },
                  {"grad_output shape (2, 5, 8) != output shape (2, 5, 4)"});
    check_refused([&] { xattn::reference_sdpa_backward(q, k, v, xt::zeros<float>({5, 4})); }, {"grad_output shape (5, 4)"});
    check_refused([&] { xattn::scaled_dot_product_attention_backward(q, xt::zeros<float>({2, 7, 6}), v, xt::zeros<float>({2, 5, 4})); },
                  {"key last dim 6 != query last dim 8"});
}

TEST_CASE("the fused backward of every kernel set agrees with the reference across tile edges") {
    // Sizes around the query groups, key tiles and vector widths, with masks, GQA, causal rules and dropout
    // (sdpa_cases.hpp).
    unsigned seed = 900;
    for (const auto* set : xattn::kernels::available_kernels()) {
        xattn::kernels::use_kernels(set);
        for (const test_inputs::SdpaCase& c : test_inputs::kEdgeCases) {
            const auto q = randn(c.q, seed++), k = randn(c.k, seed++), v = randn(c.v, seed++);
            Shape out = c.q;
            out.back() = c.v.back();
            const auto dO = randn(out, seed++);
            const std::size_t L = c.q[c.q.size() - 2], S = c.k[c.k.size() - 2];
            const xattn::SdpaOptions o = test_inputs::sdpa_case_options(c.variant, L, S, seed);
            const std::string label = std::string(set->name) + " case " + std::to_string(c.variant);
            const auto got = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
            const auto want = xattn::reference_sdpa_backward(q, k, v, dO, o);
            CHECK_GRAD(got.output, want.output, label + " output");
            CHECK_GRAD(got.grad_query, want.grad_query, label + " dQ");
            CHECK_GRAD(got.grad_key, want.grad_key, label + " dK");
            CHECK_GRAD(got.grad_value, want.grad_value, label + " dV");
        }
    }
    xattn::kernels::use_kernels(nullptr);
}

TEST_CASE("a non-finite problem takes the row path alone; the others stay on the fused path") {
    const auto q = randn({3, 20, 8}, 950), v = randn({3, 40, 8}, 952), dO = randn({3, 20, 8}, 953);
    auto k = randn({3, 40, 8}, 951);
    k(1, 7, 2) = std::numeric_limits<float>::infinity();  // problem 1 only
    const auto got = xattn::scaled_dot_product_attention_backward(q, k, v, dO);
    const auto want = xattn::reference_sdpa_backward(q, k, v, dO);
    for (std::size_t b : {0, 2}) {
        const std::string label = "problem " + std::to_string(b);
        CHECK_GRAD(xt::eval(xt::view(got.grad_query, b)), xt::eval(xt::view(want.grad_query, b)), label + " dQ");
        CHECK_GRAD(xt::eval(xt::view(got.grad_key, b)), xt::eval(xt::view(want.grad_key, b)), label + " dK");
        CHECK(xt::all(xt::isfinite(xt::view(got.grad_query, b))));
    }
    // Problem 1 follows the row path's rules, as the reference states them.
    CHECK(xt::any(!xt::isfinite(xt::view(got.grad_query, 1))) == xt::any(!xt::isfinite(xt::view(want.grad_query, 1))));
}

TEST_CASE("GQA with no query heads: the key and value gradients are zeros of their own shape") {
    // query (2, 0, 3, 4) over key (2, 2, 5, 4): no query head reads the 2 key/value heads of each batch, so their
    // gradients are 0. (The plan used to derive the key/value problem count from the query's, dividing by Hq = 0.)
    xattn::SdpaSettings s;
    s.enable_gqa = true;
    xattn::SdpaPlan plan;
    REQUIRE(xattn::plan_sdpa_backward({2, 0, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}, {2, 0, 3, 3}, xattn::MaskKind::none, {}, s,
                                      &plan)
                .ok());
    CHECK(plan.kv_problems() == 4);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> k(2 * 2 * 5 * 4, 0.5f), v(2 * 2 * 5 * 3, 0.5f), dk(k.size(), nan), dv(v.size(), nan);
    float none = 0.0f;  // the empty query, output and gradient buffers
    xattn::run_sdpa_backward(plan, &none, k.data(), v.data(), xattn::MaskRef{}, &none, &none, &none, dk.data(), dv.data());
    for (float x : dk) CHECK(x == 0.0f);
    for (float x : dv) CHECK(x == 0.0f);
}
