// Every invalid MultiheadAttention configuration, parameter or forward call is refused by name.
#include <doctest/doctest.h>

#include <xtensor/xbuilder.hpp>

#include "errors.hpp"
#include "golden.hpp"

namespace {

using xattn::Shape;
xt::xarray<float> zeros(const Shape& s) { return xt::zeros<float>(s); }

xattn::MultiheadAttention make(std::size_t E, std::size_t H, std::size_t kdim = 0, std::size_t vdim = 0,
                               bool batch_first = false) {
    xattn::MhaConfig c;
    c.embed_dim = E;
    c.num_heads = H;
    c.kdim = kdim;
    c.vdim = vdim;
    c.batch_first = batch_first;
    return xattn::MultiheadAttention(c);
}

}  // namespace

TEST_CASE("refused: embed_dim not divisible by num_heads, or zero") {
    check_refused([] { make(10, 3); }, {"multi_head_attention: embed_dim 10 is not divisible by num_heads 3"});
    check_refused([] { make(0, 1); }, {"embed_dim and num_heads must be positive", "embed_dim 0"});
    check_refused([] { make(8, 0); }, {"num_heads 0"});
}

TEST_CASE("refused: parameters of the wrong size or not in this configuration") {
    auto mha = make(8, 2);
    check_refused([&] { mha.set_parameter("in_proj_weight", zeros({5})); },
                  {"in_proj_weight needs 192 values for shape (24, 8), got 5"});
    check_refused([&] { mha.set_parameter("out_proj.bias", zeros({7})); }, {"out_proj.bias needs 8 values"});
    check_refused([&] { mha.set_parameter("q_proj_weight", zeros({8, 8})); },
                  {"no parameter named 'q_proj_weight'", "in_proj_weight"});
    auto separate = make(8, 2, 5, 3);
    check_refused([&] { separate.set_parameter("in_proj_weight", zeros({24, 8})); }, {"no parameter named 'in_proj_weight'"});
    check_refused([&] { separate.set_parameter("k_proj_weight", zeros({8, 8})); }, {"k_proj_weight needs 40 values for shape (8, 5)"});
    check_refused([&] { separate.set_parameter("bias_k", zeros({8})); }, {"no parameter named 'bias_k'"});
}

TEST_CASE("a refused parameter leaves the module's parameters unchanged") {
    auto mha = make(8, 2);
    const auto before = mha.parameter("in_proj_weight");
    check_refused([&] { mha.set_parameter("in_proj_weight", zeros({5})); }, {"in_proj_weight"});
    CHECK(mha.parameter("in_proj_weight") == before);
}

TEST_CASE("refused: inputs whose embedding size does not match the configuration") {
    auto mha = make(8, 2, 5, 3);
    check_refused([&] { mha.forward(zeros({4, 2, 6}), zeros({3, 2, 5}), zeros({3, 2, 3})); },
                  {"multi_head_attention: query embedding size 6 != embed_dim 8", "query (4, 2, 6)"});
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({3, 2, 8}), zeros({3, 2, 3})); },
                  {"key embedding size 8 != kdim 5"});
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({3, 2, 5}), zeros({3, 2, 8})); },
                  {"value embedding size 8 != vdim 3"});
}

TEST_CASE("refused: wrong ranks, batch sizes and sequence lengths") {
    auto mha = make(8, 2);
    check_refused([&] { mha.forward(zeros({1, 4, 2, 8}), zeros({1, 3, 2, 8}), zeros({1, 3, 2, 8})); },
                  {"query must be 3-D (L, N, E) or 2-D (L, E) unbatched", "(1, 4, 2, 8)"});
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({3, 8}), zeros({3, 8})); }, {"same rank as query"});
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({3, 3, 8}), zeros({3, 3, 8})); }, {"batch sizes differ"});
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({3, 2, 8}), zeros({5, 2, 8})); },
                  {"key and value sequence lengths differ"});
}

TEST_CASE("refused: masks of the wrong shape") {
    auto mha = make(8, 2);
    xattn::MhaForwardOptions o;
    o.key_padding_mask = xattn::Mask::boolean(xt::zeros<bool>({2, 5}));
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({6, 2, 8}), zeros({6, 2, 8}), o); },
                  {"key_padding_mask shape (2, 5) != (2, 6) (N, S)"});
    o = {};
    o.attn_mask = xattn::Mask::additive(xt::zeros<float>({5, 6}));
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({6, 2, 8}), zeros({6, 2, 8}), o); },
                  {"attn_mask shape (5, 6) is neither (4, 6) (L, S) nor (4, 4, 6) (N·H, L, S)"});
    o.attn_mask = xattn::Mask::additive(xt::zeros<float>({2, 4, 6}));
    check_refused([&] { mha.forward(zeros({4, 2, 8}), zeros({6, 2, 8}), zeros({6, 2, 8}), o); }, {"attn_mask shape (2, 4, 6)"});
}

TEST_CASE("a MultiheadAttention keeps working after a refused call") {
    auto mha = make(8, 2);
    check_refused([&] { mha.forward(zeros({4, 2, 6}), zeros({3, 2, 8}), zeros({3, 2, 8})); }, {"query embedding size"});
    const auto r = mha.forward(zeros({4, 2, 8}), zeros({3, 2, 8}), zeros({3, 2, 8}));
    CHECK(r.output.shape()[0] == 4);
    CHECK(xt::allclose(r.weights, 1.0f / 3.0f));
}
