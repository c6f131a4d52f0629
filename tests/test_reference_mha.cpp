// The float64 MultiheadAttention reference (tests/reference/reference_mha.cpp) against PyTorch's fixtures: the
// oracle fuzz_mha holds the module to must itself agree with torch.nn.MultiheadAttention and its autograd.
#include <doctest/doctest.h>

#include <xtensor/xmath.hpp>

#include "golden.hpp"
#include "reference/reference_mha.hpp"

namespace {

xt::xarray<float> f32(const xt::xarray<double>& x) { return xt::cast<float>(x); }

}  // namespace

TEST_CASE("reference_mha: every mha fixture's output and weights match PyTorch") {
    const auto& all = golden::cases("mha.txt");
    REQUIRE(all.size() >= 15);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        const xattn::MultiheadAttention mha = golden::make_mha(c);
        const auto r = xattn::reference_mha(mha, c.at("query").f32(), c.at("key").f32(), c.at("value").f32(),
                                            golden::mha_options(c));
        CHECK_CLOSE(f32(r.value.output), c.at("output"), c.name + " output");
        if (c.has("weights")) CHECK_CLOSE(f32(r.value.weights), c.at("weights"), c.name + " weights");
    }
}

TEST_CASE("reference_mha: every gradient fixture matches PyTorch autograd, inputs and parameters") {
    const auto& all = golden::cases("mha_grad.txt");
    REQUIRE(all.size() >= 15);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        const xattn::MultiheadAttention mha = golden::make_mha(c);
        const xt::xarray<float> dO = c.at("grad_output").f32();
        const auto r = xattn::reference_mha(mha, c.at("query").f32(), c.at("key").f32(), c.at("value").f32(),
                                            golden::mha_options(c), &dO);
        xattn::MhaGradientResult got{f32(r.value.output), f32(r.value.grad_query), f32(r.value.grad_key),
                                     f32(r.value.grad_value), {}};
        for (const auto& entry : r.value.grad_parameters) got.grad_parameters[entry.first] = f32(entry.second);
        golden::check_mha_gradients(got, c);
    }
}
