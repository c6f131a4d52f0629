// The tiled kernels (src/kernels/) of every instruction set this machine runs (avx512f, avx2+fma, sse4.1 and
// sse4.1/16 — the code the wasm SIMD builds run, in blocks of 8 and of 16 accumulators —, scalar) against the
// float64 reference and the row kernel: awkward sizes around SIMD widths and tile edges, masks, causal rules, GQA,
// dropout, non-finite values, both the streaming path (no weights) and the materialising one, and the projections
// of MultiheadAttention.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "golden.hpp"
#include "kernel_probes/probes.hpp"
#include "kernels/kernels.hpp"
#include "sdpa_kernels.hpp"
#include "random_inputs.hpp"
#include "reference/reference_mha.hpp"
#include "sdpa_cases.hpp"

namespace {

using xattn::Shape;
using xattn::kernels::KernelSet;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using test_inputs::randn;
using test_inputs::rand_bool;

// Runs one call through a kernel set, or through the row kernel when `set` is null.
xattn::AttentionResult run(const KernelSet* set, const xt::xarray<float>& q, const xt::xarray<float>& k,
                           const xt::xarray<float>& v, const xattn::SdpaOptions& o) {
    auto shape = [](const xt::xarray<float>& a) { return Shape(a.shape().begin(), a.shape().end()); };
    const xattn::MaskRef mask = o.attn_mask.ref();
    xattn::SdpaPlan plan;
    const xattn::Status st =
        xattn::plan_sdpa(shape(q), shape(k), shape(v), mask.kind, mask.shape, xattn::settings_of(o), &plan);
    REQUIRE_MESSAGE(st.ok(), st.message());
    xattn::AttentionResult r;
    r.output = xt::xarray<float>::from_shape(plan.output_shape);
    r.weights = xt::xarray<float>::from_shape(plan.need_weights ? plan.weights_shape : Shape{0});
    // Poison the outputs so a position the kernel forgets to write cannot pass by luck.
    r.output.fill(12345.0f);
    r.weights.fill(12345.0f);
    float* w = plan.need_weights ? r.weights.data() : nullptr;
    if (set) xattn::run_attention(*set, plan, q.data(), k.data(), v.data(), mask, r.output.data(), w);
    else xattn::run_sdpa_rows(plan, q.data(), k.data(), v.data(), mask, r.output.data(), w);
    return r;
}

// Every kernel set, streaming and materialising, against the reference and the row kernel.
void check_all_sets(const xt::xarray<float>& q, const xt::xarray<float>& k, const xt::xarray<float>& v,
                    xattn::SdpaOptions o, const std::string& label) {
    o.need_weights = true;
    const auto want = xattn::reference_sdpa(q, k, v, o);
    const auto rows = run(nullptr, q, k, v, o);
    for (const KernelSet* set : xattn::kernels::available_kernels()) {
        const std::string name = label + " [" + set->name + "]";
        o.need_weights = true;
        const auto got = run(set, q, k, v, o);
        CHECK_CLOSE(got.output, want.output, name + " materialising output vs reference");
        CHECK_CLOSE(got.weights, want.weights, name + " weights vs reference");
        CHECK_CLOSE(got.output, rows.output, name + " materialising output vs row kernel");
        o.need_weights = false;
        const auto streamed = run(set, q, k, v, o);
        CHECK_CLOSE(streamed.output, want.output, name + " streaming output vs reference");
        CHECK_CLOSE(streamed.output, rows.output, name + " streaming output vs row kernel");
        CHECK(streamed.weights.size() == 0);
    }
}

std::string dims(std::size_t L, std::size_t S, std::size_t E, std::size_t Ev) {
    return "L=" + std::to_string(L) + " S=" + std::to_string(S) + " E=" + std::to_string(E) + " Ev=" + std::to_string(Ev);
}

// Which set is active for the API; restored on scope exit.
struct UseKernels {
    explicit UseKernels(const KernelSet* set) { xattn::kernels::use_kernels(set); }
    ~UseKernels() { xattn::kernels::use_kernels(nullptr); }
};

// f() with `set` active for the API.
template <class F>
auto with_kernels(const KernelSet* set, const F& f) {
    const UseKernels use(set);
    return f();
}

}  // namespace

TEST_CASE("kernels: this machine runs the best instruction set it has, and always the scalar one") {
    const auto sets = xattn::kernels::available_kernels();
    REQUIRE(!sets.empty());
    CHECK(std::string(sets.back()->name) == "scalar");
    CHECK(&xattn::kernels::best_kernels() == sets.front());
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx512f"))
        CHECK(std::string(xattn::kernels::best_kernels().name) == "avx512f");
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        CHECK(std::string(xattn::kernels::best_kernels().name) == "avx2+fma");
    auto offered = [&](const char* name) {
        for (const KernelSet* s : sets)
            if (std::string(s->name) == name) return true;
        return false;
    };
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) CHECK(offered("avx2+fma"));
    if (__builtin_cpu_supports("sse4.1")) CHECK(offered("sse4.1"));
    if (__builtin_cpu_supports("sse4.1")) CHECK(offered("sse4.1/16"));
#endif
}

TEST_CASE("kernels: the API runs the best kernel set, bit for bit, with and without weights") {
    const auto q = randn({3, 2, 37, 16}, 11), k = randn({3, 2, 70, 16}, 12), v = randn({3, 2, 70, 9}, 13);
    xattn::SdpaOptions o;
    o.attn_mask = xattn::Mask::boolean(rand_bool({37, 70}, 0.7, 14));
    for (bool weights : {false, true}) {
        o.need_weights = weights;
        const auto api = xattn::scaled_dot_product_attention(q, k, v, o);
        const auto best = run(&xattn::kernels::best_kernels(), q, k, v, o);
        CHECK(api.output == best.output);
        CHECK(api.weights == best.weights);
    }
}

TEST_CASE("kernels: every set's exp2 is within 2 ULP of std::exp2 down to 2^-126, 0 below -126.5, NaN at NaN") {
    auto ulps = [](float a, float b) {
        std::int32_t ia, ib;
        std::memcpy(&ia, &a, 4);
        std::memcpy(&ib, &b, 4);
        return std::abs(static_cast<std::int64_t>(ia) - ib);
    };
    std::vector<float> x;
    for (float v = 0.0f; v >= -126.0f; v = std::nextafter(v, -200.0f) - 1e-4f * (1.0f - v / 150.0f)) x.push_back(v);
    // Every half integer too: where the reduction's rounding to n goes to even, r is ±1/2, the ends of the fit.
    for (float v = -0.5f; v >= -125.5f; v -= 1.0f) x.push_back(v);
    const std::size_t checked = x.size();
    // Past the accurate range: 2^x under FLT_MIN (possibly subnormal; -126.5 rounds to n = -126, the even
    // one), then exactly 0 below -126.5;
    // then -inf (a masked score) and NaN, each also in a vector of finite values (lanes must not mix).
    const std::vector<float> tail = {-126.1f, -126.3f, -126.49f, -126.5f, -126.6f, -127.0f, -127.2f, -150.0f,
                                     -1e30f, -kInf, kNaN, -1.0f, kNaN, -2.0f, -kInf, -3.0f, -4.0f};
    x.insert(x.end(), tail.begin(), tail.end());
    for (const auto* set : xattn::kernels::available_kernels()) {
        CAPTURE(set->name);
        std::vector<float> got(x.size());
        xattn::kernels::probes_of(*set).exp2_nonpositive(x.data(), x.size(), got.data());
        std::int64_t worst = 0;
        for (std::size_t i = 0; i < checked; ++i)
            worst = std::max(worst, ulps(got[i], static_cast<float>(std::exp2(static_cast<double>(x[i])))));
        CHECK(worst <= 2);
        CHECK(got[0] == 1.0f);
        for (std::size_t i = checked; i < x.size(); ++i) {
            CAPTURE(x[i]);
            if (std::isnan(x[i])) {
                CHECK(std::isnan(got[i]));
            } else if (x[i] < -126.5f) {
                CHECK(got[i] == 0.0f);
                CHECK(!std::signbit(got[i]));
            } else if (x[i] < -126.0f) {
                CHECK(got[i] >= 0.0f);
                CHECK(got[i] < std::numeric_limits<float>::min());
                CHECK(std::fabs(got[i] - std::exp2(x[i])) <= 3 * std::numeric_limits<float>::denorm_min());  // subnormal steps
            } else {
                CHECK(ulps(got[i], static_cast<float>(std::exp2(static_cast<double>(x[i])))) <= 2);
            }
        }
    }
}

TEST_CASE("kernels: every set agrees with the reference and the row kernel around SIMD widths and tile edges") {
    unsigned seed = 100;
    // 1, SIMD widths ±1 (4, 8 and 16), the 16- and 32-query groups, the 64-key tile and 64-query block, and
    // past them.
    for (std::size_t L : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65})
        for (std::size_t S : {1, 3, 5, 8, 9, 16, 17, 63, 64, 65, 130})
            for (std::size_t E : {1, 4, 7, 9, 17, 33}) {
                const std::size_t Ev = (L + S + E) % 37 + 1;  // 1 … 37, so Ev ≠ E and odd widths past 16 and 32 too
                const auto q = randn({2, L, E}, seed++), k = randn({2, S, E}, seed++), v = randn({2, S, Ev}, seed++);
                check_all_sets(q, k, v, {}, dims(L, S, E, Ev));
            }
}

TEST_CASE("kernels: head sizes 64 and 128, several key tiles, L != S") {
    unsigned seed = 200;
    for (auto [L, S, E, Ev] : {std::array<std::size_t, 4>{128, 128, 64, 64}, {70, 200, 64, 64}, {197, 197, 64, 64},
                               {33, 65, 128, 128}, {100, 40, 64, 32}, {20, 150, 32, 80}}) {
        const auto q = randn({2, L, E}, seed++), k = randn({2, S, E}, seed++), v = randn({2, S, Ev}, seed++);
        check_all_sets(q, k, v, {}, dims(L, S, E, Ev));
    }
}

TEST_CASE("kernels: boolean and float masks broadcast from every shape") {
    const std::size_t B = 2, H = 3, L = 19, S = 70, E = 9, Ev = 5;
    const auto q = randn({B, H, L, E}, 301), k = randn({B, H, S, E}, 302), v = randn({B, H, S, Ev}, 303);
    unsigned seed = 310;
    for (const Shape& ms : {Shape{L, S}, Shape{1, S}, Shape{S}, Shape{L, 1}, Shape{B, 1, 1, S}, Shape{H, 1, S},
                            Shape{B, H, L, S}, Shape{1, H, L, 1}}) {
        xattn::SdpaOptions o;
        o.attn_mask = xattn::Mask::boolean(rand_bool(ms, 0.7, seed++));
        check_all_sets(q, k, v, o, "bool mask " + xattn::shape_to_string(ms));
        o.attn_mask = xattn::Mask::additive(randn(ms, seed++));
        check_all_sets(q, k, v, o, "float mask " + xattn::shape_to_string(ms));
    }
    // -inf in a float mask forbids like a false in a boolean one.
    xt::xarray<float> bias = randn({L, S}, seed++);
    xt::view(bias, xt::range(0, L, 3), xt::range(0, S, 2)) = -kInf;
    xattn::SdpaOptions o;
    o.attn_mask = xattn::Mask::additive(bias);
    check_all_sets(q, k, v, o, "float mask with -inf");
}

TEST_CASE("kernels: causal, both alignments, L < S, L = S and L > S (bottom-right rows with no key give 0)") {
    unsigned seed = 400;
    for (auto [L, S] : {std::array<std::size_t, 2>{1, 1}, {5, 5}, {17, 17}, {130, 130}, {7, 100}, {70, 200},
                        {100, 7}, {200, 70}, {65, 64}, {64, 65}}) {
        const auto q = randn({2, L, 8}, seed++), k = randn({2, S, 8}, seed++), v = randn({2, S, 6}, seed++);
        for (auto alignment : {xattn::CausalAlignment::top_left, xattn::CausalAlignment::bottom_right}) {
            xattn::SdpaOptions o;
            o.is_causal = true;
            o.causal_alignment = alignment;
            check_all_sets(q, k, v, o,
                           "causal " + std::string(alignment == xattn::CausalAlignment::top_left ? "top-left " : "bottom-right ") +
                               dims(L, S, 8, 6));
        }
    }
}

TEST_CASE("kernels: causal rows that see no key give weights 0 and output 0 in every set and path") {
    const auto q = randn({1, 90, 4}, 451), k = randn({1, 20, 4}, 452), v = randn({1, 20, 3}, 453);
    xattn::SdpaOptions o;
    o.is_causal = true;
    o.causal_alignment = xattn::CausalAlignment::bottom_right;  // queries 0 … 69 see nothing
    for (const KernelSet* set : xattn::kernels::available_kernels())
        for (bool weights : {false, true}) {
            INFO(set->name << (weights ? " materialising" : " streaming"));
            o.need_weights = weights;
            const auto r = run(set, q, k, v, o);
            CHECK(xt::all(xt::equal(xt::view(r.output, 0, xt::range(0, 70)), 0.0f)));
            CHECK(xt::all(xt::isfinite(r.output)));
            if (weights) CHECK(xt::all(xt::equal(xt::view(r.weights, 0, xt::range(0, 70)), 0.0f)));
        }
}

TEST_CASE("kernels: grouped-query attention, with causal and masks") {
    const auto q = randn({2, 6, 21, 8}, 501), k = randn({2, 2, 67, 8}, 502), v = randn({2, 2, 67, 5}, 503);
    xattn::SdpaOptions o;
    o.enable_gqa = true;
    check_all_sets(q, k, v, o, "gqa 6 over 2");
    o.is_causal = true;
    o.causal_alignment = xattn::CausalAlignment::bottom_right;
    check_all_sets(q, k, v, o, "gqa 6 over 2 causal");
    const auto q4 = randn({4, 9, 16}, 504), k1 = randn({1, 33, 16}, 505), v1 = randn({1, 33, 16}, 506);
    xattn::SdpaOptions m;
    m.enable_gqa = true;
    m.attn_mask = xattn::Mask::boolean(rand_bool({4, 9, 33}, 0.5, 507));
    check_all_sets(q4, k1, v1, m, "gqa 4 over 1 with a per-head mask");
}

TEST_CASE("kernels: dropout drops the same weights as the reference and scales the kept ones") {
    unsigned seed = 600;
    for (auto [L, S] : {std::array<std::size_t, 2>{1, 1}, {9, 17}, {70, 130}}) {
        const auto q = randn({3, L, 8}, seed++), k = randn({3, S, 8}, seed++), v = randn({3, S, 7}, seed++);
        xattn::SdpaOptions o;
        o.dropout_p = 0.3;
        o.seed = 77 + L;
        check_all_sets(q, k, v, o, "dropout " + dims(L, S, 8, 7));
        o.is_causal = true;
        check_all_sets(q, k, v, o, "dropout causal " + dims(L, S, 8, 7));
    }
}

TEST_CASE("kernels: a NaN key or an inf value that a query may not see never reaches it") {
    const std::size_t L = 40, S = 100;
    const auto q = randn({1, L, 8}, 701);
    auto k = randn({1, S, 8}, 702), v = randn({1, S, 5}, 703);
    k(0, 80, 3) = kNaN;  // causal: only queries 80 - (S - L) = 20 … 39 see key 80 (bottom-right)
    v(0, 90, 1) = kInf;  // only queries 30 … 39 see value row 90
    v(0, 95, 2) = kNaN;  // only queries 35 … 39 see value row 95
    xattn::SdpaOptions o;
    o.is_causal = true;
    o.causal_alignment = xattn::CausalAlignment::bottom_right;
    for (const KernelSet* set : xattn::kernels::available_kernels())
        for (bool weights : {false, true}) {
            INFO(set->name << (weights ? " materialising" : " streaming"));
            o.need_weights = weights;
            const auto out = run(set, q, k, v, o).output;
            for (std::size_t i = 0; i < L; ++i) {
                INFO("query " << i);
                CHECK(xt::all(xt::isfinite(xt::view(out, 0, i))) == (i < 20));
            }
        }
}

TEST_CASE("kernels: a visible NaN score keeps its row NaN when a later key tile raises the max past exp's range") {
    // Key 1 holds a NaN, so every query's row is NaN (PyTorch's softmax, and the reference). A later key scores
    // 400 above the rest: the online softmax then rescales what came before by exp(-400) = 0, which must not
    // turn the NaN sum into 0 (it once did, and the row came out as if the NaN key were absent).
    for (const auto& keys : {std::array<std::size_t, 2>{300, 200}, {3000, 500}, {3000, 2999}}) {
        const std::size_t S = keys[0], big = keys[1];  // not a structured binding: INFO captures them
        const auto q = xt::xarray<float>(xt::ones<float>({1, 3, 4}));  // (B, L, E)
        auto k = randn({1, S, 4}, 720), v = randn({1, S, 2}, 721);    // (B, S, E), (B, S, Ev)
        k(0, 1, 2) = kNaN;
        for (std::size_t e = 0; e < 4; ++e) k(0, big, e) = 100.0f;
        const xattn::SdpaOptions o;
        CHECK(xt::all(xt::isnan(xattn::reference_sdpa(q, k, v, o).output)));
        CHECK(xt::all(xt::isnan(run(nullptr, q, k, v, o).output)));  // the row kernel
        for (const KernelSet* set : xattn::kernels::available_kernels())
            for (bool weights : {false, true}) {
                INFO((std::string(set->name) + (weights ? " materialising" : " streaming")) << " S=" << S << " big key " << big);
                xattn::SdpaOptions w = o;
                w.need_weights = weights;
                CHECK(xt::all(xt::isnan(run(set, q, k, v, w).output)));
            }
    }
}

TEST_CASE("kernels: masked-out keys with huge K, inf or NaN V equal the keys removed") {
    const auto q = randn({2, 12, 6}, 711);
    auto k = randn({2, 75, 6}, 712), v = randn({2, 75, 4}, 713);
    xt::xarray<bool> allowed = xt::ones<bool>({75});
    for (std::size_t j : {3, 40, 70}) {
        allowed(j) = false;
        xt::view(k, xt::all(), j) = 1e30f;
        v(0, j, 1) = kInf;
        v(1, j, 2) = kNaN;
    }
    xt::view(k, xt::all(), 41, 0) = kNaN;
    allowed(41) = false;
    xt::xarray<float> k_kept = xt::zeros<float>({2, 71, 6}), v_kept = xt::zeros<float>({2, 71, 4});
    for (std::size_t j = 0, t = 0; j < 75; ++j)
        if (allowed(j)) {
            xt::view(k_kept, xt::all(), t) = xt::view(k, xt::all(), j);
            xt::view(v_kept, xt::all(), t++) = xt::view(v, xt::all(), j);
        }
    xattn::SdpaOptions o;
    o.attn_mask = xattn::Mask::boolean(allowed);
    const auto want = xattn::reference_sdpa(q, k_kept, v_kept).output;
    for (const KernelSet* set : xattn::kernels::available_kernels())
        for (bool weights : {false, true}) {
            o.need_weights = weights;
            CHECK_CLOSE(run(set, q, k, v, o).output, want,
                        std::string(set->name) + (weights ? " materialising" : " streaming"));
        }
}

TEST_CASE("kernels: NaN in query row i reaches only output row i; subnormal and ±1e4 logits compute exactly") {
    auto q = randn({1, 20, 8}, 721);
    const auto k = randn({1, 70, 8}, 722), v = randn({1, 70, 3}, 723);
    q(0, 13, 2) = kNaN;
    for (const KernelSet* set : xattn::kernels::available_kernels())
        for (bool weights : {false, true}) {
            INFO(set->name << (weights ? " materialising" : " streaming"));
            xattn::SdpaOptions o;
            o.need_weights = weights;
            const auto r = run(set, q, k, v, o);
            for (std::size_t i = 0; i < 20; ++i) CHECK(xt::any(xt::isnan(xt::view(r.output, 0, i))) == (i == 13));
            if (weights) CHECK(xt::all(xt::isnan(xt::view(r.weights, 0, 13))));
        }
    const float tiny = std::numeric_limits<float>::denorm_min() * 64;
    const xt::xarray<float> qs = xt::full_like(randn({1, 9, 5}, 724), tiny);
    check_all_sets(qs, randn({1, 66, 5}, 725), randn({1, 66, 4}, 726), {}, "subnormal queries");
    const xt::xarray<float> big = randn({2, 17, 4}, 727) * 100.0f;
    xattn::SdpaOptions unit;
    unit.scale = 1.0;
    check_all_sets(big, randn({2, 70, 4}, 728) * 25.0f, randn({2, 70, 4}, 729), unit, "logits of ~1e4");
}

TEST_CASE("kernels: the streaming path's scratch does not depend on L and grows by a byte per 16 keys of S") {
    for (const KernelSet* set : xattn::kernels::available_kernels()) {
        INFO(set->name);
        auto bytes = [&](std::size_t L, std::size_t S) {
            xattn::kernels::AttentionProblem p;
            p.in.batch = 1, p.in.L = L, p.in.S = S, p.in.E = 64, p.in.Ev = 64;
            return set->attention_workspace(p);
        };
        CHECK(bytes(128, 1024) == bytes(16384, 1024));
        CHECK(bytes(16384, 16384) - bytes(16384, 1024) <= (16384 - 1024) / 16 + 64);  // + alignment
        CHECK(bytes(16384, 16384) < 256 * 1024);  // (L, S) floats would be 1 GiB
    }
}

TEST_CASE("kernels: heads too wide for a tile's scratch (E = 2^20) run on the row kernel, same results") {
    const std::size_t E = std::size_t{1} << 20;
    const auto q = randn({1, 2, E}, 761), k = randn({1, 3, E}, 762), v = randn({1, 3, 2}, 763);
    xattn::SdpaOptions o;
    o.scale = 1e-3;
    for (bool weights : {false, true}) {
        o.need_weights = weights;
        const auto api = xattn::scaled_dot_product_attention(q, k, v, o);
        const auto rows = run(nullptr, q, k, v, o);
        CHECK(api.output == rows.output);
        CHECK(api.weights == rows.weights);
    }
}

TEST_CASE("kernels: every sdpa and mha fixture matches PyTorch through the API with each kernel set") {
    for (const KernelSet* set : xattn::kernels::available_kernels()) {
        const UseKernels use(set);
        for (const golden::Case& c : golden::cases("sdpa.txt")) {
            INFO(set->name << " fixture " << c.name);
            const auto q = c.at("query").f32(), k = c.at("key").f32(), v = c.at("value").f32();
            xattn::SdpaOptions o = golden::sdpa_options(c);
            const auto r = xattn::scaled_dot_product_attention(q, k, v, o);
            CHECK_CLOSE(r.output, c.at("output"), c.name + " output [" + set->name + "]");
            if (c.has("weights")) CHECK_CLOSE(r.weights, c.at("weights"), c.name + " weights [" + set->name + "]");
            o.need_weights = !o.need_weights;  // the other path too
            CHECK_CLOSE(xattn::scaled_dot_product_attention(q, k, v, o).output, c.at("output"),
                        c.name + " output, other path [" + set->name + "]");
        }
        for (const golden::Case& c : golden::cases("mha.txt")) {
            INFO(set->name << " fixture " << c.name);
            const auto mha = golden::make_mha(c);
            const auto r = mha.forward(c.at("query").f32(), c.at("key").f32(), c.at("value").f32(), golden::mha_options(c));
            CHECK_CLOSE(r.output, c.at("output"), c.name + " output [" + set->name + "]");
            if (c.has("weights")) CHECK_CLOSE(r.weights, c.at("weights"), c.name + " weights [" + set->name + "]");
        }
    }
}

// Every element golden::within_reference (the tolerance plus a roundoff of reference_mha's terms); the first
// that is not, else "".
std::string mha_mismatch(const xt::xarray<float>& got, const xt::xarray<double>& want, const xt::xarray<double>& terms,
                         double atol, double rtol) {
    if (got.size() != want.size()) return std::to_string(got.size()) + " values, want " + std::to_string(want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double g = got.data()[i], w = want.data()[i];
        if (!golden::within_reference(g, w, terms.data()[i], atol, rtol))
            return "element " + std::to_string(i) + ": " + std::to_string(g) + ", want " + std::to_string(w);
    }
    return "";
}

TEST_CASE("kernels: MultiheadAttention beside the fixtures, forward and backward, agrees with the float64 reference") {
    // Head dims 17, 3, 1 and 5 around the vector widths; kdim / vdim of their own; (L, N, E), batch first and
    // unbatched; bias_k and zero keys; every kind of mask; dropout; query rows across the 16-row groups and keys
    // across the 96-key tiles. Parameters drawn at 1/sqrt(fan_in), biases at 1.
    struct Call {
        xattn::MhaConfig config;
        std::size_t N, L, S;  // N = 0: unbatched
        bool kpm_float, kpm_bool, am_float, am_bool, am_per_head, causal, average, training;
    };
    auto config = [](std::size_t E, std::size_t H, std::size_t kdim, std::size_t vdim, bool bias, bool batch_first,
                     bool bias_kv, bool zero_attn, double dropout) {
        xattn::MhaConfig c;
        c.embed_dim = E, c.num_heads = H, c.kdim = kdim, c.vdim = vdim, c.bias = bias, c.batch_first = batch_first;
        c.add_bias_kv = bias_kv, c.add_zero_attn = zero_attn, c.dropout = dropout;
        return c;
    };
    const Call calls[] = {
        {config(68, 4, 0, 0, true, false, false, false, 0.0), 2, 37, 150, true, false, false, true, false, false, false, false},
        {config(15, 5, 7, 11, false, true, true, true, 0.0), 3, 17, 97, false, false, false, false, false, true, true, false},
        {config(8, 8, 0, 0, true, false, false, true, 0.0), 0, 65, 33, false, true, true, false, true, false, true, false},
        {config(10, 2, 4, 0, true, false, true, false, 0.3), 2, 1, 200, false, false, false, true, true, false, false, true},
    };
    unsigned seed = 900;
    for (const Call& call : calls) {
        xattn::MultiheadAttention mha(call.config);
        for (const auto& [name, offset, shape] : mha.parameters()) {
            const double fan_in = name.find("weight") != std::string::npos ? static_cast<double>(shape.back()) : 1.0;
            mha.set_parameter(name, xt::xarray<float>(randn(shape, seed++) / std::sqrt(fan_in)));
        }
        const std::size_t N = std::max<std::size_t>(call.N, 1), E = call.config.embed_dim, H = call.config.num_heads;
        auto shape = [&](std::size_t T, std::size_t C) {
            return call.N == 0 ? Shape{T, C} : call.config.batch_first ? Shape{N, T, C} : Shape{T, N, C};
        };
        const auto q = randn(shape(call.L, E), seed++), k = randn(shape(call.S, mha.kdim()), seed++);
        const auto v = randn(shape(call.S, mha.vdim()), seed++), dO = randn(shape(call.L, E), seed++);
        xattn::MhaForwardOptions o;
        const Shape kpm = call.N == 0 ? Shape{call.S} : Shape{N, call.S};
        const Shape am = call.am_per_head ? Shape{N * H, call.L, call.S} : Shape{call.L, call.S};
        auto with_neg_inf = [](xt::xarray<float> x, const xt::xarray<bool>& where) {
            return xt::xarray<float>(xt::where(where, -kInf, x));
        };
        if (call.kpm_float) o.key_padding_mask = xattn::Mask::additive(with_neg_inf(randn(kpm, seed), rand_bool(kpm, 0.2, seed + 1)));
        if (call.kpm_bool) o.key_padding_mask = xattn::Mask::boolean(rand_bool(kpm, 0.3, seed));
        if (call.am_float) o.attn_mask = xattn::Mask::additive(with_neg_inf(randn(am, seed + 2), rand_bool(am, 0.2, seed + 3)));
        if (call.am_bool) o.attn_mask = xattn::Mask::boolean(rand_bool(am, 0.3, seed + 2));
        seed += 4;
        o.is_causal = call.causal, o.average_attn_weights = call.average, o.training = call.training, o.seed = 5;
        const xattn::ReferenceMha want = xattn::reference_mha(mha, q, k, v, o, &dO);
        for (const KernelSet* set : xattn::kernels::available_kernels()) {
            const UseKernels use(set);
            INFO(set->name << ": E " << E << ", H " << H << ", N " << call.N << ", L " << call.L << ", S " << call.S);
            const auto f = mha.forward(q, k, v, o);
            CHECK(mha_mismatch(f.output, want.value.output, want.terms.output, golden::kAtol, golden::kRtol) == "");
            CHECK(mha_mismatch(f.weights, want.value.weights, want.terms.weights, golden::kAtol, golden::kRtol) == "");
            const auto b = mha.backward(q, k, v, dO, o);
            const auto grad = [&](const xt::xarray<float>& got, const xt::xarray<double>& w, const xt::xarray<double>& t) {
                return mha_mismatch(got, w, t, golden::kGradAtol, golden::kGradRtol);
            };
            CHECK(grad(b.output, want.value.output, want.terms.output) == "");
            CHECK(grad(b.grad_query, want.value.grad_query, want.terms.grad_query) == "");
            CHECK(grad(b.grad_key, want.value.grad_key, want.terms.grad_key) == "");
            CHECK(grad(b.grad_value, want.value.grad_value, want.terms.grad_value) == "");
            REQUIRE(b.grad_parameters.size() == want.value.grad_parameters.size());
            for (const auto& entry : b.grad_parameters) {  // not a structured binding: INFO captures it
                const std::string& name = entry.first;
                INFO("parameter " << name);
                CHECK(grad(entry.second, want.value.grad_parameters.at(name), want.terms.grad_parameters.at(name)) == "");
            }
        }
    }
}

TEST_CASE("kernels: linear products agree with float64 over odd sizes, strides and without bias") {
    unsigned seed = 800;
    // Past 64 rows and 256 inputs the kernel works in blocks and slices: 70 and 300 cross them.
    for (std::size_t rows : {1, 2, 3, 5, 9, 17, 70})
        for (std::size_t in : {1, 3, 8, 16, 17, 64, 100, 300})
            for (std::size_t out : {1, 4, 7, 9, 24, 25, 33}) {
                const std::size_t x_stride = in + rows % 3, y_stride = out + 2;
                const xt::xarray<float> x = randn({rows, x_stride}, seed++), w = randn({out, in}, seed++),
                                        bias = randn({out}, seed++);
                for (bool with_bias : {true, false})
                    for (const KernelSet* set : xattn::kernels::available_kernels()) {
                        xt::xarray<float> y = xt::xarray<float>::from_shape({rows, y_stride});
                        y.fill(777.0f);
                        xattn::kernels::LinearProblem p;
                        p.rows = rows, p.in = in, p.out = out;
                        p.x = x.data(), p.x_stride = x_stride, p.w = w.data(), p.bias = with_bias ? bias.data() : nullptr;
                        p.y = y.data(), p.y_stride = y_stride;
                        xattn::kernels::run_linear(*set, p);
                        // A float sum of `in` products can be off by a few eps times the sum of their
                        // magnitudes (not of the result, which may cancel): allow 1e-6 of that.
                        double worst = 0.0;
                        for (std::size_t r = 0; r < rows; ++r)
                            for (std::size_t o = 0; o < out; ++o) {
                                double acc = with_bias ? bias(o) : 0.0, magnitude = std::fabs(acc);
                                for (std::size_t c = 0; c < in; ++c) {
                                    acc += static_cast<double>(x(r, c)) * w(o, c);
                                    magnitude += std::fabs(static_cast<double>(x(r, c)) * w(o, c));
                                }
                                worst = std::max(worst, std::fabs(y(r, o) - acc) / (1e-6 * magnitude + 1e-30));
                            }
                        INFO(set->name << " rows=" << rows << " in=" << in << " out=" << out);
                        CHECK(worst <= 1.0);
                        // The padding columns of Y are not written.
                        CHECK(xt::all(xt::equal(xt::view(y, xt::all(), xt::range(out, y_stride)), 777.0f)));
                    }
            }
}

TEST_CASE("kernels: the blocks of 16 accumulators give the bits of the blocks of 8: attention, projections, decoding") {
    // Which blocking runs depends on the CPU (blocking.cpp), so results must not: each score sums its E products
    // in order and each output element its keys in order, whatever the block, over the same tiles (TileGrain).
    const KernelSet* eight = xattn::kernels::sse41_kernels();
    const KernelSet* sixteen = xattn::kernels::sse41_kernels_16();
    const auto sets = xattn::kernels::available_kernels();
    if (!eight || std::find(sets.begin(), sets.end(), eight) == sets.end()) return;  // no SSE4.1 here
    REQUIRE(sixteen);
    auto same_bits = [](const xt::xarray<float>& a, const xt::xarray<float>& b) {
        return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    };
    // The backward's edge cases (S = 97 and 100 are where blocks of 2 and of 4 keys would even out their tiles
    // differently), and two more: one key, and three tiles.
    std::vector<test_inputs::SdpaCase> cases(std::begin(test_inputs::kEdgeCases), std::end(test_inputs::kEdgeCases));
    cases.push_back({{1, 70, 3}, {1, 1, 3}, {1, 1, 5}, 0});
    cases.push_back({{1, 130, 64}, {1, 290, 64}, {1, 290, 64}, 0});
    unsigned seed = 4000;
    for (const test_inputs::SdpaCase& c : cases) {
        const auto q = randn(c.q, seed++), k = randn(c.k, seed++), v = randn(c.v, seed++);
        Shape out = c.q;
        out.back() = c.v.back();
        const auto dO = randn(out, seed++);
        const std::size_t L = c.q[c.q.size() - 2], S = c.k[c.k.size() - 2];
        xattn::SdpaOptions o = test_inputs::sdpa_case_options(c.variant, L, S, seed);
        const std::string label = "case " + std::to_string(c.variant) + " L=" + std::to_string(L) + " S=" + std::to_string(S);
        CAPTURE(label);
        for (bool weights : {false, true}) {
            o.need_weights = weights;
            const auto a = run(eight, q, k, v, o), b = run(sixteen, q, k, v, o);
            CHECK(same_bits(a.output, b.output));
            CHECK(same_bits(a.weights, b.weights));
        }
        o.need_weights = false;
        const auto backward = [&] { return xattn::scaled_dot_product_attention_backward(q, k, v, dO, o); };
        const xattn::GradientResult ga = with_kernels(eight, backward), gb = with_kernels(sixteen, backward);
        CHECK(same_bits(ga.output, gb.output));
        CHECK(same_bits(ga.grad_query, gb.grad_query));
        CHECK(same_bits(ga.grad_key, gb.grad_key));
        CHECK(same_bits(ga.grad_value, gb.grad_value));
    }
    // The projections, in blocks of 2 and of 4 rows: each output sums its inputs in order, slice by slice.
    for (std::size_t rows : {1, 3, 5, 70})
        for (std::size_t in : {3, 64, 300})
            for (std::size_t out : {4, 9, 33}) {
                const xt::xarray<float> x = randn({rows, in}, seed++), w = randn({out, in}, seed++), bias = randn({out}, seed++);
                xt::xarray<float> ya = xt::zeros<float>({rows, out}), yb = xt::zeros<float>({rows, out});
                for (auto [set, y] : {std::pair{eight, &ya}, std::pair{sixteen, &yb}}) {
                    xattn::kernels::LinearProblem p;
                    p.rows = rows, p.in = in, p.out = out;
                    p.x = x.data(), p.x_stride = in, p.w = w.data(), p.bias = bias.data(), p.y = y->data(), p.y_stride = out;
                    xattn::kernels::run_linear(*set, p);
                }
                INFO("linear rows=" << rows << " in=" << in << " out=" << out);
                CHECK(same_bits(ya, yb));
            }
    // Decoding steps and a few stacked rows from a KV cache (float32 and float16; the decoding kernel's score
    // blocks of 8 and of 16 accumulators), GQA with 1 to 5 query heads a key/value head.
    for (auto dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16})
        for (std::size_t G : {1, 3, 4, 5})
            for (std::size_t L : {1, 3}) {
                xattn::KvCacheConfig cfg;
                cfg.kv_heads = 2, cfg.head_dim = 64, cfg.value_dim = 40, cfg.capacity = 300, cfg.dtype = dtype;
                xattn::KvCache cache(cfg);
                const auto keys = randn({1, 2, 197, 64}, seed++), values = randn({1, 2, 197, 40}, seed++);
                cache.append(keys, values);
                const auto q = randn({1, 2 * G, L, 64}, seed++);
                const auto attend = [&] { return cache.attend(q); };
                const xattn::AttentionResult a = with_kernels(eight, attend), b = with_kernels(sixteen, attend);
                INFO("kv cache G=" << G << " L=" << L << (dtype == xattn::CacheDtype::float16 ? " float16" : " float32"));
                CHECK(same_bits(a.output, b.output));
            }
}

TEST_CASE("kernels: the blocks of 16 accumulators run where there are 32 vector registers, and only there") {
    const KernelSet* eight = xattn::kernels::sse41_kernels();
    const KernelSet* sixteen = xattn::kernels::sse41_kernels_16();
    const KernelSet& scalar = xattn::kernels::scalar_kernels();
    using xattn::kernels::blocking_for;
    CHECK(blocking_for(&scalar, true) == &scalar);
    CHECK(blocking_for(&scalar, false) == &scalar);
    if (eight) {
        CHECK(blocking_for(eight, false) == eight);
        CHECK(blocking_for(eight, true) == sixteen);
        CHECK(blocking_for(sixteen, false) == sixteen);
    }
    for (const KernelSet* set : xattn::kernels::available_kernels())
        if (set != eight) CHECK(blocking_for(set, true) == set);
#if defined(__x86_64__) || defined(__i386__)
    CHECK_FALSE(xattn::kernels::many_vector_registers());  // x86's invalid operations make a negative NaN
#elif defined(__aarch64__) || defined(__riscv)
    CHECK(xattn::kernels::many_vector_registers());
#endif
    const auto sets = xattn::kernels::available_kernels();
    CHECK(&xattn::kernels::best_kernels() == blocking_for(sets.front(), xattn::kernels::many_vector_registers()));
}
