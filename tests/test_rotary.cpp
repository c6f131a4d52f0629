// Rotary position embeddings against tests/golden/rotary.txt (ONNX RotaryEmbedding's semantics, Hugging Face's
// rotate_half and GPT-J's pairs written in float64 torch; gradients by autograd), and the calls refused.
#include <doctest/doctest.h>

#include <xtensor/xbuilder.hpp>

#include "errors.hpp"
#include "golden.hpp"

namespace {

xattn::RotarySettings rotary_settings(const golden::Case& c) {
    xattn::RotarySettings s;
    s.base = std::stod(c.opts.at("base"));
    s.rotary_dim = c.size("rotary_dim");
    s.interleaved = c.flag("interleaved");
    if (c.opts.count("position_offset")) s.position_offset = std::stoll(c.opts.at("position_offset"));
    if (c.has("positions"))
        for (double p : c.at("positions").values) s.positions.push_back(static_cast<std::int64_t>(p));
    return s;
}

}  // namespace

TEST_CASE("rotary: every fixture's rotation and its gradient match the float64 answers") {
    const auto& all = golden::cases("rotary.txt");
    REQUIRE(all.size() >= 8);
    for (const golden::Case& c : all) {
        const xattn::RotarySettings s = rotary_settings(c);
        CHECK_CLOSE(xattn::apply_rotary_embedding(c.at("x").f32(), s), c.at("output"), c.name + " output");
        CHECK_GRAD(xattn::apply_rotary_embedding_backward(c.at("grad_output").f32(), s), c.at("grad_x"),
                   c.name + " grad_x");
    }
}

TEST_CASE("rotary: position 0 leaves a row as it is, and the backward undoes the forward") {
    const golden::Case& c = golden::find("rotary.txt", "rotate_half_llama_1x4x6x64");
    const auto x = c.at("x").f32();
    const xattn::RotarySettings s = rotary_settings(c);
    const auto y = xattn::apply_rotary_embedding(x, s);
    CHECK(xt::all(xt::equal(xt::view(y, 0, xt::all(), 0), xt::view(x, 0, xt::all(), 0))));
    CHECK_CLOSE(xattn::apply_rotary_embedding_backward(y, s), x, "backward of forward");
    // The features past rotary_dim pass through untouched.
    const golden::Case& partial = golden::find("rotary.txt", "partial_rotary_dim_8_of_12");
    const auto px = partial.at("x").f32();
    const auto py = xattn::apply_rotary_embedding(px, rotary_settings(partial));
    CHECK(xt::all(xt::equal(xt::view(py, xt::all(), xt::all(), xt::all(), xt::range(8, 12)),
                            xt::view(px, xt::all(), xt::all(), xt::all(), xt::range(8, 12)))));
}

TEST_CASE("refused: rotary settings that do not fit x") {
    const xt::xarray<float> x = xt::zeros<float>({2, 3, 4, 6});
    auto refuse = [&](const xattn::RotarySettings& s, std::initializer_list<std::string> fragments) {
        check_refused([&] { xattn::apply_rotary_embedding(x, s); }, fragments);
    };
    xattn::RotarySettings s;
    s.rotary_dim = 5;
    refuse(s, {"apply_rotary_embedding: rotary_dim must be even and at most D = 6", "(2, 3, 4, 6)"});
    s.rotary_dim = 8;
    refuse(s, {"rotary_dim must be even and at most D = 6 (0 = D), got 8 for x of shape (2, 3, 4, 6)"});
    s = {};
    s.base = 0.0;
    refuse(s, {"base must be finite and > 0, got 0"});
    s = {};
    s.positions = {1, 2, 3};
    refuse(s, {"positions has 3 values, expected L = 4 or B·L = 8"});
    s.positions = {0, 1, 2, -3};
    refuse(s, {"positions[3] = -3 is outside [0, 2^31)"});
    s = {};
    s.position_offset = -1;
    refuse(s, {"position_offset must be in [0, 2^31 - L], got -1"});
    check_refused([] { xattn::apply_rotary_embedding(xt::zeros<float>({5})); }, {"x must have at least 2 dims"});
    // More rows than positions, though they hold no features: refused, without wrapping 2^31 - L (a fuzzer found
    // the signed overflow).
    xattn::RotaryPlan plan;
    for (std::size_t L : {std::size_t{1} << 31 | 1, std::size_t{1} << 40, std::size_t{1} << 63}) {
        const xattn::Status st = xattn::plan_rotary({L, 0}, {}, &plan);
        CHECK_MESSAGE(st.message().find("position_offset must be in [0, 2^31 - L], got 0") != std::string::npos, st.message());
    }
    CHECK(xattn::plan_rotary({std::size_t{1} << 31, 0}, {}, &plan).ok());
    check_refused([] { xattn::apply_rotary_embedding(xt::zeros<float>({2, 5})); }, {"rotary_dim must be even"});
}
