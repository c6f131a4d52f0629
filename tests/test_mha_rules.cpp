// MultiheadAttention with the rules of scaled_dot_product_attention in every head (soft-cap, window, ALiBi, key
// lengths, causal together with attn_mask), forward and backward, against tests/golden/mha_rules.txt (PyTorch's
// MultiheadAttention, with the rules as an explicit mask where it can take them; autograd) and the float64
// reference_mha, with every kernel set; and the calls it refuses.
#include <doctest/doctest.h>

#include <xtensor/xbuilder.hpp>

#include "errors.hpp"
#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "reference/reference_mha.hpp"

namespace {

using xattn::Shape;
xt::xarray<float> zeros(const Shape& s) { return xt::zeros<float>(s); }

struct UseKernels {
    explicit UseKernels(const xattn::kernels::KernelSet* set) { xattn::kernels::use_kernels(set); }
    ~UseKernels() { xattn::kernels::use_kernels(nullptr); }
};

}  // namespace

TEST_CASE("mha rules: every fixture matches PyTorch-made answers, forward and backward, with every kernel set") {
    const auto& all = golden::cases("mha_rules.txt");
    REQUIRE(all.size() >= 5);
    for (const golden::Case& c : all) {
        const xattn::MultiheadAttention mha = golden::make_mha(c);
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32(), dO = c.at("grad_output").f32();
        const xattn::MhaForwardOptions o = golden::mha_options(c);
        for (const auto* set : xattn::kernels::available_kernels()) {
            const UseKernels use(set);
            const std::string label = c.name + " [" + set->name + "]";
            const auto f = mha.forward(q, k, v, o);
            CHECK_CLOSE(f.output, c.at("output"), label + " output");
            CHECK_CLOSE(f.weights, c.at("weights"), label + " weights");
            golden::check_mha_gradients(mha.backward(q, k, v, dO, o), c);
        }
    }
}

TEST_CASE("mha rules: the float64 reference_mha agrees with every fixture") {
    for (const golden::Case& c : golden::cases("mha_rules.txt")) {
        const xattn::MultiheadAttention mha = golden::make_mha(c);
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32(), dO = c.at("grad_output").f32();
        const xattn::ReferenceMha r = xattn::reference_mha(mha, q, k, v, golden::mha_options(c), &dO);
        const auto f32 = [](const xt::xarray<double>& x) { return xt::xarray<float>(xt::cast<float>(x)); };
        CHECK_CLOSE(f32(r.value.weights), c.at("weights"), c.name + " reference weights");
        xattn::MhaGradientResult got{f32(r.value.output), f32(r.value.grad_query), f32(r.value.grad_key),
                                     f32(r.value.grad_value), {}};
        for (const auto& entry : r.value.grad_parameters) got.grad_parameters[entry.first] = f32(entry.second);
        golden::check_mha_gradients(got, c);
    }
}

TEST_CASE("mha rules: is_causal with attn_mask adds the causal rule to the mask") {
    const golden::Case& c = golden::find("mha_rules.txt", "causal_with_attn_mask_and_padding");
    const xattn::MultiheadAttention mha = golden::make_mha(c);
    const auto r = mha.forward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(), golden::mha_options(c));
    for (std::size_t n = 0; n < 2; ++n)
        for (std::size_t i = 0; i < 5; ++i)
            for (std::size_t j = i + 1; j < 5; ++j) CHECK(r.weights(n, i, j) == 0.0f);
}

TEST_CASE("refused: MultiheadAttention rules that do not fit the module or the call") {
    xattn::MhaConfig config;
    config.embed_dim = 8, config.num_heads = 2;
    const xattn::MultiheadAttention mha(config);
    const auto x = zeros({5, 3, 8});  // (L, N, E)
    auto refuse = [&](const xattn::MultiheadAttention& m, const xattn::MhaForwardOptions& o,
                      std::initializer_list<std::string> fragments) {
        check_refused([&] { m.forward(x, x, x, o); }, fragments);
    };
    xattn::MhaForwardOptions o;
    o.alibi_slopes = {0.5f};
    refuse(mha, o, {"multi_head_attention: alibi_slopes has 1 values, expected one per head: num_heads = 2"});
    o = {};
    o.key_lengths = {5, 5};
    refuse(mha, o, {"key_lengths has 2 values, expected one per batch element: N = 3"});
    o.key_lengths = {5, 6, 0};
    refuse(mha, o, {"key_lengths[1] = 6 is outside [0, S] = [0, 5]"});
    o = {};
    o.softcap = -3.0;
    refuse(mha, o, {"multi_head_attention: softcap must be 0 (none) or a positive number"});
    o = {};
    o.window.left = -4;
    refuse(mha, o, {"multi_head_attention: window left must be -1"});
    config.add_bias_kv = true;
    const xattn::MultiheadAttention appended(config);
    o = {};
    o.window.left = 2;
    refuse(appended, o, {"multi_head_attention: window left needs keys with positions, which add_bias_kv and add_zero_attn append without"});
    o = {};
    o.softcap = 2.0;  // no position needed: allowed beside the appended keys
    CHECK_NOTHROW(appended.forward(x, x, x, o));
}
