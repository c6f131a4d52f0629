// The KV cache's rolling window, per-element lengths, rotary keys and SDPA's rules on attend: the scenarios of
// tests/golden/kv_rules.txt (the cache written as lists of positions in float64 torch, the attend by ONNX
// Attention's semantics on what each element holds) replayed on every kernel set, decoding and tiled paths, float32
// and float16 storage; and what the cache refuses.
#include <doctest/doctest.h>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "random_inputs.hpp"

namespace {

using xattn::Shape;
using test_inputs::randn;

struct UseKernels {
    explicit UseKernels(const xattn::kernels::KernelSet* set) { xattn::kernels::use_kernels(set); }
    ~UseKernels() { xattn::kernels::use_kernels(nullptr); }
};

xattn::KvCacheConfig config_of(const golden::Case& c, xattn::CacheDtype dtype) {
    xattn::KvCacheConfig cfg;
    cfg.batch = c.size("batch"), cfg.kv_heads = c.size("kv_heads"), cfg.head_dim = c.size("head_dim");
    cfg.value_dim = c.size("value_dim"), cfg.capacity = c.size("capacity"), cfg.rolling = c.flag("rolling");
    cfg.dtype = dtype;
    if (c.opts.count("rotary_base")) {
        xattn::RotaryEmbedding r;
        r.base = std::stod(c.opts.at("rotary_base"));
        r.rotary_dim = c.size("rotary_dim");
        r.interleaved = c.flag("rotary_interleaved");
        cfg.rotary = r;
    }
    return cfg;
}

// The scenario's appends and truncations, in order.
void replay(const golden::Case& c, xattn::KvCache& cache) {
    for (std::size_t i = 0; i < c.size("steps"); ++i) {
        const std::string step = "step" + std::to_string(i) + "_";
        if (c.has(step + "truncate")) {
            std::vector<std::size_t> lengths;
            for (double x : c.at(step + "truncate").values) lengths.push_back(static_cast<std::size_t>(x));
            const xattn::Status st = cache.truncate(lengths.data());
            REQUIRE_MESSAGE(st.ok(), st.message());
            continue;
        }
        std::vector<std::int32_t> counts;
        if (c.has(step + "counts"))
            for (double x : c.at(step + "counts").values) counts.push_back(static_cast<std::int32_t>(x));
        cache.append(c.at(step + "key").f32(), c.at(step + "value").f32(), counts);
    }
}

xattn::KvAttendOptions attend_options(const golden::Case& c) {
    const xattn::SdpaOptions s = golden::sdpa_options(c);
    xattn::KvAttendOptions o;
    o.is_causal = s.is_causal, o.softcap = s.softcap, o.window = s.window, o.alibi_slopes = s.alibi_slopes;
    o.attn_mask = s.attn_mask;
    return o;
}

}  // namespace

TEST_CASE("kv cache rules: every scenario matches its float64 answer, decoding and tiled, on every kernel set") {
    const auto& all = golden::cases("kv_rules.txt");
    REQUIRE(all.size() >= 4);
    for (const golden::Case& c : all) {
        xattn::KvCache cache(config_of(c, xattn::CacheDtype::float32));
        replay(c, cache);
        const auto& lengths = c.at("lengths").values;
        for (std::size_t b = 0; b < lengths.size(); ++b) CHECK(cache.length(b) == static_cast<std::size_t>(lengths[b]));
        CHECK_CLOSE(cache.keys(), c.at("keys"), c.name + " keys, turned by their positions");
        const auto q = c.at("query").f32();
        xattn::KvAttendOptions o = attend_options(c);
        for (const auto* set : xattn::kernels::available_kernels()) {
            const UseKernels use(set);
            for (bool weights : {false, true}) {
                o.need_weights = weights;
                const std::string label = c.name + " [" + set->name + (weights ? "] with weights" : "]");
                const auto r = cache.attend(q, o);
                CHECK_CLOSE(r.output, c.at("output"), label + " output");
                if (weights) CHECK_CLOSE(r.weights, c.at("weights"), label + " weights");
            }
        }
    }
}

TEST_CASE("kv cache rules: float16 storage attends as SDPA with key lengths on what it holds") {
    for (const golden::Case& c : golden::cases("kv_rules.txt")) {
        xattn::KvCache cache(config_of(c, xattn::CacheDtype::float16));
        replay(c, cache);
        const auto q = c.at("query").f32();
        const xattn::KvAttendOptions o = attend_options(c);
        xattn::SdpaOptions so = golden::sdpa_options(c);
        so.enable_gqa = true, so.causal_alignment = xattn::CausalAlignment::bottom_right;
        for (double x : c.at("lengths").values) so.key_lengths.push_back(static_cast<std::int32_t>(x));
        const auto want = xattn::scaled_dot_product_attention(q, cache.keys(), cache.values(), so);
        for (const auto* set : xattn::kernels::available_kernels()) {
            const UseKernels use(set);
            CHECK_CLOSE(cache.attend(q, o).output, want.output, c.name + " float16 [" + set->name + "]");
        }
    }
}

TEST_CASE("kv cache rules: a rolling cache keeps the last capacity positions, oldest first, and counts on") {
    xattn::KvCacheConfig cfg;
    cfg.batch = 2, cfg.kv_heads = 1, cfg.head_dim = 4, cfg.capacity = 4, cfg.rolling = true;
    xattn::KvCache cache(cfg);
    xt::xarray<float> k = xt::zeros<float>({2, 1, 3, 4});
    for (std::size_t t = 0; t < 3; ++t) xt::view(k, xt::all(), 0, t) = static_cast<float>(t);
    cache.append(k, k);
    xt::xarray<float> more = xt::zeros<float>({2, 1, 3, 4});
    for (std::size_t t = 0; t < 3; ++t) xt::view(more, xt::all(), 0, t) = static_cast<float>(3 + t);
    cache.append(more, more, {3, 1});  // element 0: positions 0 … 5, element 1: 0 … 3
    CHECK(cache.length(0) == 4);
    CHECK(cache.position(0) == 6);
    CHECK(cache.length(1) == 4);
    CHECK(cache.position(1) == 4);
    const auto held = cache.keys();  // (2, 1, 4, 4), oldest first
    for (std::size_t j = 0; j < 4; ++j) {
        CHECK(held(0, 0, j, 0) == static_cast<float>(2 + j));
        CHECK(held(1, 0, j, 0) == static_cast<float>(j));
    }
    // Truncating keeps what is still held; before the oldest held position it is refused.
    const std::size_t back[2] = {4, 4};
    REQUIRE(cache.truncate(back).ok());
    CHECK(cache.length(0) == 2);
    CHECK(cache.keys()(0, 0, 1, 0) == 3.0f);
    CHECK(xt::all(xt::equal(xt::view(cache.keys(), 0, 0, xt::range(2, 4)), 0.0f)));  // past element 0's length
    const std::size_t too_far[2] = {1, 4};
    CHECK(cache.truncate(too_far).message() ==
          "kv_cache: truncate: lengths[0] = 1 is before position 2, the oldest this rolling cache still holds for element 0");
    CHECK(cache.append({2, 1, 5, 4}, randn({2, 1, 5, 4}, 1).data(), {2, 1, 5, 4}, randn({2, 1, 5, 4}, 2).data()).message() ==
          "kv_cache: append: 5 positions are more than a rolling cache of capacity 4 holds at once; nothing was appended "
          "(key (2, 1, 5, 4), value (2, 1, 5, 4))");
}

TEST_CASE("kv cache rules: per-element counts are checked, and a refused append appends nothing") {
    xattn::KvCacheConfig cfg;
    cfg.batch = 2, cfg.kv_heads = 1, cfg.head_dim = 4, cfg.capacity = 5;
    xattn::KvCache cache(cfg);
    const auto k = randn({2, 1, 3, 4}, 3);
    const std::int32_t bad[2] = {4, 0}, room[2] = {3, 2}, over[2] = {3, 3};
    CHECK(cache.append({2, 1, 3, 4}, k.data(), {2, 1, 3, 4}, k.data(), bad).message().find("counts[0] = 4 is outside [0, n] = [0, 3]") !=
          std::string::npos);
    REQUIRE(cache.append({2, 1, 3, 4}, k.data(), {2, 1, 3, 4}, k.data(), room).ok());
    CHECK(cache.append({2, 1, 3, 4}, k.data(), {2, 1, 3, 4}, k.data(), over).message().find(
              "3 positions do not fit: element 0 holds 3 of its capacity 5") != std::string::npos);
    CHECK(cache.length(0) == 3);
    CHECK(cache.length(1) == 2);
    CHECK_THROWS_WITH_AS(cache.append(k, k, {1}), doctest::Contains("counts has 1 values, expected one per batch element: B = 2"),
                         std::invalid_argument);
    xattn::KvAttendOptions o;
    o.alibi_slopes = {0.5f};
    CHECK_THROWS_WITH_AS(cache.attend(randn({2, 2, 1, 4}, 4), o),
                         doctest::Contains("kv_cache: attend: alibi_slopes has 1 values, expected one per query head: Hq = 2"),
                         std::invalid_argument);
    xattn::KvCacheConfig rotary = cfg;
    rotary.rotary = xattn::RotaryEmbedding{};
    rotary.rotary->rotary_dim = 6;
    CHECK_THROWS_WITH_AS(xattn::KvCache{rotary}, doctest::Contains("kv_cache: rotary_dim must be even and at most head_dim = 4 (0 = head_dim), got 6"),
                         std::invalid_argument);
}

TEST_CASE("kv cache rules: each element's rows align to its own length, as SDPA with key lengths") {
    // Causal prefill of 3 rows for elements holding 9, 4 and 0 keys, with a window and ALiBi, decoding kernel and tiled.
    xattn::KvCacheConfig cfg;
    cfg.batch = 3, cfg.kv_heads = 2, cfg.head_dim = 16, cfg.value_dim = 12, cfg.capacity = 100;
    xattn::KvCache cache(cfg);
    cache.append(randn({3, 2, 9, 16}, 10), randn({3, 2, 9, 12}, 11), {9, 4, 0});
    const auto q = randn({3, 4, 3, 16}, 12);
    xattn::KvAttendOptions o;
    o.is_causal = true, o.window = {5, -1}, o.alibi_slopes = {0.5f, 0.25f, 0.125f, 0.0625f}, o.softcap = 4.0;
    xattn::SdpaOptions so;
    so.enable_gqa = true, so.is_causal = true, so.causal_alignment = xattn::CausalAlignment::bottom_right;
    so.window = o.window, so.alibi_slopes = o.alibi_slopes, so.softcap = o.softcap, so.key_lengths = {9, 4, 0};
    const auto want = xattn::reference_sdpa(q, cache.keys(), cache.values(), so);
    for (const auto* set : xattn::kernels::available_kernels()) {
        const UseKernels use(set);
        CHECK_CLOSE(cache.attend(q, o).output, want.output, std::string(set->name) + " decoding kernel");
        o.need_weights = true;
        CHECK_CLOSE(cache.attend(q, o).output, want.output, std::string(set->name) + " tiled");
        o.need_weights = false;
    }
    CHECK(xt::all(xt::equal(xt::view(cache.attend(q, o).output, 2), 0.0f)));  // no keys: zeros
}
