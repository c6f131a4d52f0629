// The rules beyond PyTorch's SDPA (soft-cap, sliding windows, ALiBi, key lengths, causal with a mask, returned
// scores) against the fixtures of tests/golden/make_golden_rules.py (PyTorch and ONNX Attention's semantics in
// float64), through the API, the float64 reference, the row kernel and every kernel set, forward and backward.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "errors.hpp"
#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "random_inputs.hpp"
#include "sdpa_kernels.hpp"

namespace {

using xattn::Shape;
using xattn::kernels::KernelSet;
using test_inputs::randn;
constexpr float kInf = std::numeric_limits<float>::infinity();

Shape shape_of(const xt::xarray<float>& a) { return Shape(a.shape().begin(), a.shape().end()); }

bool same_bits(const xt::xarray<float>& a, const xt::xarray<float>& b) {
    return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// One call through a kernel set, or through the row kernel when `set` is null; outputs poisoned first, so a
// position the kernel forgets to write cannot pass by luck.
xattn::AttentionResult run(const KernelSet* set, const xt::xarray<float>& q, const xt::xarray<float>& k,
                           const xt::xarray<float>& v, const xattn::SdpaOptions& o) {
    const xattn::MaskRef mask = o.attn_mask.ref();
    xattn::SdpaPlan plan;
    const xattn::Status st = xattn::plan_sdpa(shape_of(q), shape_of(k), shape_of(v), mask.kind, mask.shape, o, &plan);
    REQUIRE_MESSAGE(st.ok(), st.message());
    xattn::AttentionResult r;
    r.output = xt::xarray<float>::from_shape(plan.output_shape);
    r.weights = xt::xarray<float>::from_shape(plan.need_weights ? plan.weights_shape : Shape{0});
    r.scores = xt::xarray<float>::from_shape(plan.return_scores != xattn::ScoresStage::none ? plan.weights_shape : Shape{0});
    r.output.fill(12345.0f), r.weights.fill(12345.0f), r.scores.fill(12345.0f);
    float* w = plan.need_weights ? r.weights.data() : nullptr;
    float* s = r.scores.size() ? r.scores.data() : nullptr;
    if (set) {
        std::vector<unsigned char> ws = xattn::kernels::allocate_workspace(xattn::attention_workspace_bytes(*set, plan));
        xattn::run_attention(*set, plan, q.data(), k.data(), v.data(), mask, r.output.data(), w, ws.data(), s);
    } else {
        std::vector<unsigned char> ws = xattn::kernels::allocate_workspace(xattn::sdpa_rows_workspace_bytes(plan));
        xattn::run_sdpa_rows(plan, q.data(), k.data(), v.data(), mask, r.output.data(), w, ws.data(), s);
    }
    return r;
}

// Which set is active for the API; restored on scope exit.
struct UseKernels {
    explicit UseKernels(const KernelSet* set) { xattn::kernels::use_kernels(set); }
    ~UseKernels() { xattn::kernels::use_kernels(nullptr); }
};

// Every kernel set (streaming and materialising) and the row kernel against the float64 reference.
void check_all_paths(const xt::xarray<float>& q, const xt::xarray<float>& k, const xt::xarray<float>& v,
                     xattn::SdpaOptions o, const std::string& label) {
    o.need_weights = true;
    const auto want = xattn::reference_sdpa(q, k, v, o);
    const auto rows = run(nullptr, q, k, v, o);
    CHECK_CLOSE(rows.output, want.output, label + " row kernel output");
    CHECK_CLOSE(rows.weights, want.weights, label + " row kernel weights");
    if (o.return_scores != xattn::ScoresStage::none) CHECK_CLOSE(rows.scores, want.scores, label + " row kernel scores");
    for (const KernelSet* set : xattn::kernels::available_kernels()) {
        const std::string name = label + " [" + set->name + "]";
        for (bool weights : {true, false}) {
            o.need_weights = weights;
            const auto got = run(set, q, k, v, o);
            const std::string path = name + (weights ? " materialising" : " streaming");
            CHECK_CLOSE(got.output, want.output, path + " output");
            if (weights) CHECK_CLOSE(got.weights, want.weights, path + " weights");
            if (o.return_scores != xattn::ScoresStage::none) CHECK_CLOSE(got.scores, want.scores, path + " scores");
        }
    }
}

xattn::SdpaOptions with_rules(int variant, std::size_t B, std::size_t H, std::size_t S, unsigned& seed) {
    xattn::SdpaOptions o;
    switch (variant) {
        case 0: o.is_causal = true, o.window.left = 5; break;
        case 1: o.causal_alignment = xattn::CausalAlignment::bottom_right, o.window = {3, 2}; break;
        case 2: o.softcap = 1.5, o.is_causal = true, o.causal_alignment = xattn::CausalAlignment::bottom_right; break;
        case 3:
            for (std::size_t h = 0; h < H; ++h) o.alibi_slopes.push_back(0.25f / static_cast<float>(h + 1));
            o.attn_mask = xattn::Mask::boolean(test_inputs::rand_bool({S}, 0.8, seed++));
            break;
        case 4:
            for (std::size_t n = 0; n < B; ++n) o.key_lengths.push_back(static_cast<std::int32_t>((S * (n + 1)) / (B + 1)));
            o.is_causal = true, o.causal_alignment = xattn::CausalAlignment::bottom_right, o.window.left = 17;
            break;
        default:
            o.window = {0, 0};
            o.is_causal = true;
            o.attn_mask = xattn::Mask::additive(randn({S}, seed++));
            break;
    }
    return o;
}

}  // namespace

TEST_CASE("rules: every fixture matches its float64 answer through the API and the reference") {
    const auto& all = golden::cases("sdpa_rules.txt");
    REQUIRE(all.size() >= 25);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
        const xattn::SdpaOptions o = golden::sdpa_options(c);
        const auto api = xattn::scaled_dot_product_attention(q, k, v, o);
        const auto ref = xattn::reference_sdpa(q, k, v, o);
        CHECK_CLOSE(api.output, c.at("output"), c.name + " output");
        CHECK_CLOSE(ref.output, c.at("output"), c.name + " reference output");
        if (c.has("weights")) {
            CHECK_CLOSE(api.weights, c.at("weights"), c.name + " weights");
            CHECK_CLOSE(ref.weights, c.at("weights"), c.name + " reference weights");
        } else {
            CHECK(api.weights.size() == 0);
        }
        if (c.has("scores")) {
            CHECK_CLOSE(api.scores, c.at("scores"), c.name + " scores");
            CHECK_CLOSE(ref.scores, c.at("scores"), c.name + " reference scores");
        } else {
            CHECK(api.scores.size() == 0);
        }
    }
}

TEST_CASE("rules: every fixture through every kernel set, streaming and materialising, and the row kernel") {
    for (const golden::Case& c : golden::cases("sdpa_rules.txt")) {
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
        xattn::SdpaOptions o = golden::sdpa_options(c);
        for (const KernelSet* set : xattn::kernels::available_kernels())
            for (bool weights : {false, true}) {
                o.need_weights = weights;
                const std::string label = c.name + " [" + set->name + (weights ? "] materialising" : "] streaming");
                const auto r = run(set, q, k, v, o);
                CHECK_CLOSE(r.output, c.at("output"), label + " output");
                if (weights && c.has("weights")) CHECK_CLOSE(r.weights, c.at("weights"), label + " weights");
                if (c.has("scores")) CHECK_CLOSE(r.scores, c.at("scores"), label + " scores");
            }
        o.need_weights = true;
        const auto r = run(nullptr, q, k, v, o);
        CHECK_CLOSE(r.output, c.at("output"), c.name + " row kernel output");
        if (c.has("weights")) CHECK_CLOSE(r.weights, c.at("weights"), c.name + " row kernel weights");
        if (c.has("scores")) CHECK_CLOSE(r.scores, c.at("scores"), c.name + " row kernel scores");
    }
}

TEST_CASE("rules: every gradient fixture matches autograd through every kernel set and the reference") {
    const auto& all = golden::cases("sdpa_rules_grad.txt");
    REQUIRE(all.size() >= 13);
    for (const golden::Case& c : all) {
        const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
        const auto dO = c.at("grad_output").f32();
        const xattn::SdpaOptions o = golden::sdpa_options(c);
        auto check = [&](const xattn::GradientResult& r, const std::string& label) {
            CHECK_GRAD(r.output, c.at("output"), label + " output");
            CHECK_GRAD(r.grad_query, c.at("grad_query"), label + " grad_query");
            CHECK_GRAD(r.grad_key, c.at("grad_key"), label + " grad_key");
            CHECK_GRAD(r.grad_value, c.at("grad_value"), label + " grad_value");
        };
        check(xattn::reference_sdpa_backward(q, k, v, dO, o), c.name + " (reference)");
        for (const KernelSet* set : xattn::kernels::available_kernels()) {
            const UseKernels use(set);
            check(xattn::scaled_dot_product_attention_backward(q, k, v, dO, o), c.name + " [" + set->name + "]");
        }
    }
}

TEST_CASE("rules: a batch element with key length 0 gets zeros: output, weights and gradients") {
    const golden::Case& c = golden::find("sdpa_rules_grad.txt", "key_lengths_causal_bottom_right");
    const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32(), dO = c.at("grad_output").f32();
    xattn::SdpaOptions o = golden::sdpa_options(c);
    REQUIRE(o.key_lengths.at(0) == 0);
    const auto g = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
    CHECK(xt::all(xt::equal(xt::view(g.output, 0), 0.0f)));
    CHECK(xt::all(xt::equal(xt::view(g.grad_query, 0), 0.0f)));
    CHECK(xt::all(xt::equal(xt::view(g.grad_key, 0), 0.0f)));
    CHECK(xt::all(xt::equal(xt::view(g.grad_value, 0), 0.0f)));
    CHECK_FALSE(xt::any(xt::isnan(g.grad_query)));
    o.need_weights = true;
    const auto f = xattn::scaled_dot_product_attention(q, k, v, o);
    CHECK(xt::all(xt::equal(xt::view(f.weights, 0), 0.0f)));
}

TEST_CASE("rules: the soft-cap keeps every score inside (-c, c), before the mask: -inf stays -inf") {
    const golden::Case& c = golden::find("sdpa_rules.txt", "scores_biased");
    const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
    xattn::SdpaOptions o = golden::sdpa_options(c);
    o.return_scores = xattn::ScoresStage::softcapped;
    const auto capped = xattn::scaled_dot_product_attention(q, k, v, o).scores;
    CHECK(xt::all(xt::abs(capped) <= static_cast<float>(o.softcap)));
    o.return_scores = xattn::ScoresStage::scaled;
    const auto scaled = xattn::scaled_dot_product_attention(q, k, v, o).scores;
    CHECK(xt::any(xt::abs(scaled) > static_cast<float>(o.softcap)));  // the cap does bite here
    const auto biased = xattn::scaled_dot_product_attention(q, k, v, golden::sdpa_options(c)).scores;
    CHECK(xt::any(xt::equal(biased, -kInf)));
    const auto w = xattn::scaled_dot_product_attention(q, k, v, golden::sdpa_options(c)).weights;
    CHECK(xt::all(xt::equal(xt::where(xt::equal(biased, -kInf), w, 0.0f), 0.0f)));
}

TEST_CASE("rules: causal with a mask is the mask with the causal rule folded in") {
    const auto q = randn({2, 3, 21, 8}, 11), k = randn({2, 3, 40, 8}, 12), v = randn({2, 3, 40, 5}, 13);
    const xt::xarray<float> bias = randn({21, 40}, 14);
    for (auto alignment : {xattn::CausalAlignment::top_left, xattn::CausalAlignment::bottom_right}) {
        xattn::SdpaOptions both;
        both.is_causal = true, both.causal_alignment = alignment, both.need_weights = true;
        both.attn_mask = xattn::Mask::additive(bias);
        xattn::SdpaOptions folded;
        folded.need_weights = true;
        xt::xarray<float> f = bias;
        const std::size_t shift = alignment == xattn::CausalAlignment::top_left ? 0 : 40 - 21;
        for (std::size_t i = 0; i < 21; ++i)
            for (std::size_t j = i + shift + 1; j < 40; ++j) f(i, j) = -kInf;
        folded.attn_mask = xattn::Mask::additive(f);
        const auto a = xattn::scaled_dot_product_attention(q, k, v, both), b = xattn::scaled_dot_product_attention(q, k, v, folded);
        CHECK_CLOSE(a.output, b.output, "causal with mask vs folded");
        CHECK_CLOSE(a.weights, b.weights, "causal with mask vs folded weights");
    }
}

TEST_CASE("rules: a window wider than every distance computes what no window does, bit for bit") {
    const auto q = randn({2, 70, 16}, 21), k = randn({2, 130, 16}, 22), v = randn({2, 130, 9}, 23);
    for (const KernelSet* set : xattn::kernels::available_kernels())
        for (bool weights : {false, true}) {
            xattn::SdpaOptions none;
            none.is_causal = true, none.need_weights = weights;
            xattn::SdpaOptions wide = none;
            wide.window = {130, 1000};
            const auto a = run(set, q, k, v, none), b = run(set, q, k, v, wide);
            CHECK_MESSAGE(same_bits(a.output, b.output), set->name);
            CHECK_MESSAGE(same_bits(a.weights, b.weights), set->name);
        }
}

TEST_CASE("rules: keys outside every row's window are never reached, not even as NaN") {
    const std::size_t L = 100, S = 300;
    const auto q = randn({1, L, 8}, 31);
    auto k = randn({1, S, 8}, 32), v = randn({1, S, 4}, 33);
    xattn::SdpaOptions o;
    o.is_causal = true, o.causal_alignment = xattn::CausalAlignment::bottom_right, o.window.left = 20;
    const auto clean = xattn::reference_sdpa(q, k, v, o).output;
    // Rows sit at 200 … 299 and see keys p − 20 … p: keys below 180 are outside every window.
    for (std::size_t j : {0, 5, 90, 150, 179}) {
        k(0, j, 1) = std::numeric_limits<float>::quiet_NaN();
        v(0, j, 2) = kInf;
    }
    for (const KernelSet* set : xattn::kernels::available_kernels())
        for (bool weights : {false, true}) {
            o.need_weights = weights;
            CHECK_CLOSE(run(set, q, k, v, o).output, clean, std::string(set->name) + (weights ? " materialising" : " streaming"));
        }
}

TEST_CASE("rules: every set agrees with the reference around group, tile and vector edges") {
    unsigned seed = 500;
    for (std::size_t L : {1, 7, 16, 17, 33, 65, 130})
        for (std::size_t S : {1, 9, 64, 97, 200})
            for (int variant = 0; variant < 6; ++variant) {
                const std::size_t B = 2, H = 3, E = 4 + (L + S + variant) % 13, Ev = 1 + (L * 3 + S + variant) % 19;
                const auto q = randn({B, H, L, E}, seed++), k = randn({B, H, S, E}, seed++), v = randn({B, H, S, Ev}, seed++);
                const xattn::SdpaOptions o = with_rules(variant, B, H, S, seed);
                check_all_paths(q, k, v, o, "variant " + std::to_string(variant) + " L=" + std::to_string(L) +
                                                " S=" + std::to_string(S) + " E=" + std::to_string(E));
            }
}

TEST_CASE("rules: every set's soft-capped scores are within float rounding of c·tanh(s/c), near 0 and saturated") {
    // Scores from -40 to 40 in small steps, capped at 1, 7 and 30: both branches of the kernels' tanh and the bend.
    const std::size_t S = 400;
    xt::xarray<float> q = xt::ones<float>({1, 1, 1});
    xt::xarray<float> k = xt::zeros<float>(Shape{1, S, 1});
    for (std::size_t j = 0; j < S; ++j) k(0, j, 0) = -40.0f + 0.2f * static_cast<float>(j) + 0.013f;
    const auto v = randn({1, S, 3}, 41);
    for (double cap : {1.0, 7.0, 30.0}) {
        xattn::SdpaOptions o;
        o.scale = 1.0, o.softcap = cap, o.return_scores = xattn::ScoresStage::softcapped;
        for (const KernelSet* set : xattn::kernels::available_kernels()) {
            const auto r = run(set, q, k, v, o);
            for (std::size_t j = 0; j < S; ++j) {
                const double s = k(0, j, 0), want = cap * std::tanh(s / cap);
                INFO(set->name << " cap " << cap << " score " << s);
                CHECK(std::fabs(r.scores(0, 0, j) - want) <= 4e-7 * std::fabs(want) + 2e-7 * cap);
            }
        }
    }
}

TEST_CASE("refused: a soft-cap, window, ALiBi slopes or key lengths out of their ranges") {
    auto refuse = [](const xattn::SdpaOptions& o, const Shape& q, std::initializer_list<std::string> fragments) {
        const Shape k{q[0], q[1], 6, q[3]};
        check_refused([&] { xattn::scaled_dot_product_attention(xt::zeros<float>(q), xt::zeros<float>(k), xt::zeros<float>(k), o); },
                      fragments);
    };
    const Shape q{2, 3, 4, 8};
    for (double cap : {-1.0, std::nan(""), 1e300, 1e-50}) {
        xattn::SdpaOptions o;
        o.softcap = cap;
        refuse(o, q, {"scaled_dot_product_attention: softcap must be 0 (none) or a positive number"});
    }
    xattn::SdpaOptions o;
    o.window.left = -2;
    refuse(o, q, {"window left must be -1 (unbounded) or a count of keys >= 0, got -2"});
    o = {};
    o.window.right = -7;
    refuse(o, q, {"window right", "got -7"});
    o = {};
    o.alibi_slopes = {0.5f, 0.25f};
    refuse(o, q, {"alibi_slopes has 2 values, expected one per query head: Hq = 3", "(2, 3, 4, 8)"});
    o.alibi_slopes = {0.5f, kInf, 0.1f};
    refuse(o, q, {"alibi_slopes[1] must be finite"});
    o = {};
    o.key_lengths = {1, 2, 3};
    refuse(o, q, {"key_lengths has 3 values, expected one per batch element: B = 2"});
    o.key_lengths = {6, 7};
    refuse(o, q, {"key_lengths[1] = 7 is outside [0, S] = [0, 6]"});
    o.key_lengths = {-1, 2};
    refuse(o, q, {"key_lengths[0] = -1"});
    // The reference refuses alike: its plan is the API's.
    o.key_lengths = {6, 6};
    CHECK_NOTHROW(xattn::reference_sdpa(xt::zeros<float>(q), xt::zeros<float>({2, 3, 6, 8}), xt::zeros<float>({2, 3, 6, 8}), o));
}
