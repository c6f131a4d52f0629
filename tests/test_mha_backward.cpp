// MultiheadAttention's backward: PyTorch autograd fixtures (tests/golden/mha_grad.txt) for the inputs and
// every parameter, central differences of the float32 forward for configurations beside them, dropout's
// seed, and refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>


#include "golden.hpp"
#include "random_inputs.hpp"

namespace {

using xattn::Shape;

void check_fixture(const golden::Case& c) {
    const xattn::MultiheadAttention mha = golden::make_mha(c);
    golden::check_mha_gradients(mha.backward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(),
                                             c.at("grad_output").f32(), golden::mha_options(c)),
                                c);
}

using test_inputs::randn;

// Σ grad_output ⊙ forward(...) in float64.
double loss(const xt::xarray<float>& out, const xt::xarray<float>& dO) {
    double acc = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i) acc += static_cast<double>(out.flat(i)) * dO.flat(i);
    return acc;
}

// Central differences of the loss over every element of `x` (changed through `set`), against `analytic`.
// float32 forward: a step of 1e-2 keeps the rounding noise (~1e-7·|loss|/h) below the O(h²) error.
void check_differences(const std::string& label, xt::xarray<float> x, const xt::xarray<float>& analytic,
                       const std::function<double(const xt::xarray<float>&)>& f) {
    constexpr float h = 1e-2f;
    double worst = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float keep = x.flat(i);
        x.flat(i) = keep + h;
        const double up = f(x);
        x.flat(i) = keep - h;
        const double down = f(x);
        x.flat(i) = keep;
        const double numeric = (up - down) / (2.0 * h);
        worst = std::max(worst, std::fabs(numeric - analytic.flat(i)) / (1e-2 + std::fabs(numeric)));
    }
    CHECK_MESSAGE(worst < 2e-2, label << ": worst relative difference " << worst);
}

}  // namespace

TEST_CASE("mha backward: every gradient fixture matches PyTorch autograd, inputs and parameters") {
    const auto& all = golden::cases("mha_grad.txt");
    REQUIRE(all.size() >= 15);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        check_fixture(c);
    }
}

TEST_CASE("mha backward: its output is the forward's, with or without dropout") {
    for (const char* name : {"bias_kv_zero_attn_with_masks", "dropout_training_seed_11", "is_causal_key_padding_bias_kv"}) {
        const golden::Case& c = golden::find("mha_grad.txt", name);
        const xattn::MultiheadAttention mha = golden::make_mha(c);
        xattn::MhaForwardOptions o = golden::mha_options(c);
        const auto r = mha.backward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(),
                                    c.at("grad_output").f32(), o);
        o.need_weights = false;
        CHECK_GRAD(r.output, mha.forward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(), o).output, name);
    }
}

TEST_CASE("mha backward: dropout is seeded, and off outside training") {
    const golden::Case& c = golden::find("mha_grad.txt", "dropout_training_seed_11");
    const xattn::MultiheadAttention mha = golden::make_mha(c);
    const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32(), dO = c.at("grad_output").f32();
    xattn::MhaForwardOptions o = golden::mha_options(c);
    o.seed += 1;  // another seed drops other weights
    CHECK_FALSE(golden::compare(mha.backward(q, k, v, dO, o).grad_value, c.at("grad_value"), golden::kGradAtol, golden::kGradRtol).ok);
    o.training = false;  // eval: the configured dropout does nothing
    const auto eval = mha.backward(q, k, v, dO, o);
    o.need_weights = true;
    o.average_attn_weights = true;  // (N, L, S): each row of every head sums to 1, so does their mean
    const auto weights = mha.forward(q, k, v, o).weights;
    REQUIRE(weights.dimension() == 3);
    for (std::size_t i = 0; i < weights.shape(0); ++i)
        for (std::size_t l = 0; l < weights.shape(1); ++l) {
            double row = 0.0;
            for (std::size_t s = 0; s < weights.shape(2); ++s) row += weights(i, l, s);
            CHECK(std::fabs(row - 1.0) < 1e-5);  // no weight dropped or scaled
        }
    CHECK_FALSE(xt::any(xt::isnan(eval.grad_query)));
}

TEST_CASE("mha backward: central differences agree on configurations beside the fixtures") {
    struct Config {
        const char* name;
        std::size_t E, H, kdim, vdim;
        bool bias, batch_first, bias_kv, zero_attn, causal, kpm, per_head_mask, unbatched;
    };
    for (const Config& cfg : {Config{"causal + per-head float mask off, kpm, zero_attn, batch_first", 6, 3, 6, 6, true,
                                     true, false, true, true, true, false, false},
                              Config{"per-head bool mask, bias_kv, kdim/vdim, no bias", 8, 2, 3, 5, false, false, true,
                                     false, false, false, true, false},
                              Config{"unbatched, causal with bias_kv", 4, 2, 4, 4, true, false, true, false, true, false,
                                     false, true}}) {
        INFO(cfg.name);
        xattn::MhaConfig c;
        c.embed_dim = cfg.E, c.num_heads = cfg.H, c.kdim = cfg.kdim, c.vdim = cfg.vdim, c.bias = cfg.bias;
        c.batch_first = cfg.batch_first, c.add_bias_kv = cfg.bias_kv, c.add_zero_attn = cfg.zero_attn, c.init_seed = 5;
        xattn::MultiheadAttention mha(c);
        for (const auto& [name, offset, shape] : mha.parameters())  // non-zero biases, so their gradients matter
            mha.set_parameter(name, randn(shape, 40 + static_cast<unsigned>(name.size())) * 0.5f);
        const std::size_t L = 3, S = 4, N = 2;
        auto layout = [&](std::size_t T, std::size_t D) {
            return cfg.unbatched ? Shape{T, D} : cfg.batch_first ? Shape{N, T, D} : Shape{T, N, D};
        };
        const auto q = randn(layout(L, cfg.E), 1), k = randn(layout(S, cfg.kdim), 2), v = randn(layout(S, cfg.vdim), 3);
        const auto dO = randn(layout(L, cfg.E), 4);
        xattn::MhaForwardOptions o;
        o.need_weights = false;
        o.is_causal = cfg.causal;
        if (cfg.kpm) {
            xt::xarray<bool> pad = xt::zeros<bool>({N, S});
            pad(0, S - 1) = true;
            o.key_padding_mask = xattn::Mask::boolean(pad);
        }
        if (cfg.per_head_mask) {
            xt::xarray<bool> forbid = randn({N * cfg.H, L, S}, 6) > 0.8f;
            for (std::size_t r = 0; r < N * cfg.H; ++r)
                for (std::size_t i = 0; i < L; ++i) forbid(r, i, i % S) = false;  // no row fully masked
            o.attn_mask = xattn::Mask::boolean(forbid);
        }
        const auto r = mha.backward(q, k, v, dO, o);
        check_differences("query", q, r.grad_query, [&](const xt::xarray<float>& x) { return loss(mha.forward(x, k, v, o).output, dO); });
        check_differences("key", k, r.grad_key, [&](const xt::xarray<float>& x) { return loss(mha.forward(q, x, v, o).output, dO); });
        check_differences("value", v, r.grad_value, [&](const xt::xarray<float>& x) { return loss(mha.forward(q, k, x, o).output, dO); });
        for (const auto& [name, grad] : r.grad_parameters) {
            xattn::MultiheadAttention probe(c);
            for (const auto& [other, at, shape] : mha.parameters()) probe.set_parameter(other, mha.parameter(other));
            const auto& parameter = name;  // C++17 lambdas cannot capture a structured binding (clang refuses; g++ allows)
            check_differences(name, mha.parameter(name), grad, [&](const xt::xarray<float>& x) {
                probe.set_parameter(parameter, x);
                return loss(probe.forward(q, k, v, o).output, dO);
            });
        }
    }
}

TEST_CASE("mha backward: refused with the forward's messages, and for a grad_output of another shape") {
    xattn::MhaConfig c;
    c.embed_dim = 8, c.num_heads = 2;
    const xattn::MultiheadAttention mha(c);
    const auto x = randn({3, 2, 8}, 1);
    CHECK_THROWS_WITH_AS(mha.backward(x, x, x, randn({3, 2, 7}, 2)),
                         "multi_head_attention_backward: grad_output shape (3, 2, 7) != output shape (3, 2, 8) (the query's)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha.backward(randn({3, 2, 6}, 1), x, x, x),
                         doctest::Contains("multi_head_attention: query embedding size 6 != embed_dim 8"),
                         std::invalid_argument);
    xattn::MhaConfig bad = c;
    bad.dropout = 1.0;
    CHECK_THROWS_WITH_AS(xattn::MultiheadAttention{bad}, "multi_head_attention: dropout must be in [0, 1), got 1",
                         std::invalid_argument);
}
