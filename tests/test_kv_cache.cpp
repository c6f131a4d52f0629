// The KV cache: float16 rounding and widening, attend against scaled_dot_product_attention on what the
// cache holds (every kernel set, decoding and prefill, GQA, MQA, masks, causal, scale, weights), and refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <cstring>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "golden.hpp"
#include "kernel_probes/probes.hpp"
#include "kernels/half.hpp"
#include "kernels/kernels.hpp"
#include "random_inputs.hpp"

namespace {

using xattn::Shape;

using test_inputs::randn;

bool is_nan_half(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

}  // namespace

TEST_CASE("kv cache: float16 rounds to nearest even and widens back exactly, for every half") {
    using xattn::kernels::float_to_half;
    using xattn::kernels::half_to_float;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = half_to_float(static_cast<std::uint16_t>(h));
        if (is_nan_half(static_cast<std::uint16_t>(h))) {
            CHECK(std::isnan(f));
            CHECK(is_nan_half(float_to_half(f)));
            continue;
        }
        REQUIRE(float_to_half(f) == h);
    }
    // Between neighbours a < b (positive, finite): below the midpoint a, above it b, at it the even one.
    for (std::uint16_t a = 0; a < 0x7bff; ++a) {
        const std::uint16_t b = a + 1;
        const float fa = half_to_float(a), fb = half_to_float(b), mid = (fa + fb) / 2;  // exact: 12 bits
        REQUIRE(float_to_half(mid) == (a % 2 == 0 ? a : b));
        REQUIRE(float_to_half(std::nextafter(mid, 0.0f)) == a);
        REQUIRE(float_to_half(std::nextafter(mid, 1e9f)) == b);
        REQUIRE(float_to_half(-mid) == ((a % 2 == 0 ? a : b) | 0x8000u));
    }
    CHECK(half_to_float(0x3c00) == 1.0f);
    CHECK(half_to_float(0x7bff) == 65504.0f);
    CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
    CHECK(float_to_half(65519.0f) == 0x7bff);
    CHECK(float_to_half(65520.0f) == 0x7c00);  // rounds to inf
    CHECK(float_to_half(1e-9f) == 0);
    CHECK(float_to_half(-0.0f) == 0x8000);
}

TEST_CASE("kv cache: every kernel set widens float16 exactly as the scalar rule does") {
    std::vector<std::uint16_t> all(65536);
    for (std::uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<std::uint16_t>(h);
    for (const auto* set : xattn::kernels::available_kernels()) {
        CAPTURE(set->name);
        std::vector<float> got(all.size());
        xattn::kernels::probes_of(*set).widen_half(all.data(), all.size(), got.data());
        std::size_t bad = 0;
        for (std::uint32_t h = 0; h < 65536; ++h) {
            const float want = xattn::kernels::half_to_float(all[h]);
            if (std::isnan(want) ? !std::isnan(got[h]) : std::memcmp(&want, &got[h], 4) != 0) ++bad;
        }
        CHECK(bad == 0);
    }
}

namespace {

struct AttendCase {
    const char* name;
    std::size_t B, Hq, Hkv, E, Ev, L;
    bool causal, mask, weights;
    double scale;  // 0: default
};

// Appends `chunks` positions at a time, truncates and appends again, then attends; compares with SDPA on
// the cache's own keys() and values() (rounded to float16 for that storage).
void check_attend(const AttendCase& c, xattn::CacheDtype dtype, unsigned seed) {
    xattn::KvCacheConfig cfg;
    cfg.batch = c.B, cfg.kv_heads = c.Hkv, cfg.head_dim = c.E, cfg.value_dim = c.Ev, cfg.capacity = 300, cfg.dtype = dtype;
    xattn::KvCache cache(cfg);
    for (std::size_t n : {1, 37, 100, 5}) {
        const auto k = randn({c.B, c.Hkv, n, c.E}, seed++), v = randn({c.B, c.Hkv, n, c.Ev}, seed++);
        cache.append(k, v);
    }
    REQUIRE(cache.length() == 143);
    REQUIRE(cache.truncate(120).ok());
    const auto k = randn({c.B, c.Hkv, 77, c.E}, seed++), v = randn({c.B, c.Hkv, 77, c.Ev}, seed++);
    cache.append(k, v);
    REQUIRE(cache.length() == 197);  // the tile edge the kernels even out

    const auto q = randn({c.B, c.Hq, c.L, c.E}, seed++);
    xattn::KvAttendOptions o;
    o.is_causal = c.causal;
    o.need_weights = c.weights;
    if (c.scale != 0.0) o.scale = c.scale;
    xattn::SdpaOptions so;
    so.enable_gqa = true;
    so.is_causal = c.causal;
    so.causal_alignment = xattn::CausalAlignment::bottom_right;
    so.need_weights = c.weights;
    so.scale = o.scale;
    if (c.mask) {
        const xattn::Mask m = xattn::Mask::boolean(randn({1, c.Hq, c.L, cache.length()}, seed++) > -1.0f);
        o.attn_mask = m;
        so.attn_mask = m;
    }
    const auto got = cache.attend(q, o);
    const auto want = xattn::scaled_dot_product_attention(q, cache.keys(), cache.values(), so);
    CHECK_CLOSE(got.output, want.output, c.name);
    if (c.weights) CHECK_CLOSE(got.weights, want.weights, c.name);
}

const AttendCase kCases[] = {
    {"decode, GQA 8 over 2", 2, 8, 2, 64, 64, 1, false, false, false, 0},
    {"decode, causal (hides nothing at L = 1)", 1, 4, 4, 16, 24, 1, true, false, false, 0},
    {"decode, MQA, weights", 1, 6, 1, 8, 5, 1, false, false, true, 0},
    {"a few rows stacked, not causal", 1, 4, 2, 12, 12, 3, false, false, false, 0.3},
    {"decode, 3 query heads a key/value head (row blocks of 3)", 1, 6, 2, 20, 36, 1, false, false, false, 0},
    {"decode, 5 query heads a key/value head (row blocks of 4 and 1)", 2, 5, 1, 32, 8, 1, false, false, false, 0},
    {"prefill, causal bottom-right, GQA", 2, 6, 3, 16, 16, 40, true, false, false, 0},
    {"prefill, mask, weights", 1, 4, 2, 8, 8, 9, false, true, true, 0},
    {"many stacked rows, wide tiles", 1, 16, 2, 32, 32, 4, false, false, false, 0},
    {"decode, mask, odd head dims", 1, 2, 1, 7, 5, 1, false, true, false, 0},
    {"decode, GQA 4 over 2, mask (each query head its own mask row)", 2, 8, 2, 16, 16, 1, false, true, false, 0},
    {"a few rows stacked, mask, scale", 1, 4, 2, 12, 12, 3, false, true, false, 0.5},
    {"prefill, mask, odd head dims (the tiled kernels gather whole and partial groups of 4)", 1, 2, 1, 7, 5, 20, false, true, false, 0},
};

}  // namespace

TEST_CASE("kv cache: attend equals SDPA on the held keys and values, float32 and float16, every kernel set") {
    unsigned seed = 1000;
    for (const auto* set : xattn::kernels::available_kernels()) {
        xattn::kernels::use_kernels(set);
        for (const AttendCase& c : kCases)
            for (auto dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
                const std::string label = std::string(set->name) + ": " + c.name +
                                          (dtype == xattn::CacheDtype::float16 ? " (float16)" : " (float32)");
                INFO(label);
                check_attend(c, dtype, seed);
                seed += 20;
            }
    }
    xattn::kernels::use_kernels(nullptr);
}

TEST_CASE("kv cache: float16 storage holds the values rounded, and keys()/values() widen them back") {
    xattn::KvCacheConfig cfg;
    cfg.kv_heads = 1, cfg.head_dim = 4, cfg.capacity = 2, cfg.dtype = xattn::CacheDtype::float16;
    xattn::KvCache cache(cfg);
    xt::xarray<float> k = {{{{0.1f, 65520.0f, 1.0f + std::ldexp(1.0f, -11), -3.0f}}}};  // a tie rounds to even: 1
    cache.append(k, k);
    const auto held = cache.keys();
    CHECK(held(0, 0, 0, 0) == xattn::kernels::half_to_float(0x2e66));
    CHECK(std::isinf(held(0, 0, 0, 1)));
    CHECK(held(0, 0, 0, 2) == 1.0f);
    CHECK(held(0, 0, 0, 3) == -3.0f);
    CHECK(xt::all(xt::equal(cache.values(), held)));
}

TEST_CASE("kv cache: masked decoding steps, an additive mask per batch element (key padding), equal SDPA") {
    // The decoding kernel takes masked steps of few rows itself: each stacked row finds its mask row through the
    // per-head plan. Key padding as a float bias (B, 1, 1, S): -inf past each sequence's end, a bias before it.
    unsigned seed = 9000;
    for (const auto* set : xattn::kernels::available_kernels()) {
        xattn::kernels::use_kernels(set);
        for (auto dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
            INFO(set->name << (dtype == xattn::CacheDtype::float16 ? " (float16)" : " (float32)"));
            xattn::KvCacheConfig cfg;
            cfg.batch = 3, cfg.kv_heads = 2, cfg.head_dim = 16, cfg.capacity = 200, cfg.dtype = dtype;
            xattn::KvCache cache(cfg);
            const auto k = randn({3, 2, 150, 16}, seed++), v = randn({3, 2, 150, 16}, seed++);
            cache.append(k, v);
            xt::xarray<float> bias = 0.5f * randn({3, 1, 1, 150}, seed++);
            for (std::size_t b = 0; b < 3; ++b)
                for (std::size_t j = 70 + 30 * b; j < 150; ++j) bias(b, 0, 0, j) = -std::numeric_limits<float>::infinity();
            const auto q = randn({3, 6, 2, 16}, seed++);  // 3 query heads a key/value head, 2 rows each
            xattn::KvAttendOptions o;
            o.attn_mask = xattn::Mask::additive(bias);
            xattn::SdpaOptions so;
            so.enable_gqa = true;
            so.attn_mask = o.attn_mask;
            const auto got = cache.attend(q, o);
            const auto want = xattn::scaled_dot_product_attention(q, cache.keys(), cache.values(), so);
            CHECK_CLOSE(got.output, want.output, "key padding");
        }
    }
    xattn::kernels::use_kernels(nullptr);
}

// The cache keeps keys in blocks of 16 positions and values in tiles of 64, in column blocks of 32 with rows
// padded to a multiple of 16 (kernels/kv_layout.hpp). Each position must come back where it was put, across every
// edge of those blocks: heads wider and narrower than a block, capacities that end mid-block, truncation mid-block.
TEST_CASE("kv cache: keys() and values() give back what was appended, across the edges of the cache's blocks") {
    struct Dims { std::size_t B, H, E, Ev, capacity; };
    const Dims dims[] = {{1, 1, 1, 1, 1}, {1, 2, 3, 17, 15}, {2, 1, 16, 32, 16}, {1, 3, 5, 33, 65}, {1, 2, 64, 48, 130}};
    unsigned seed = 7000;
    for (const Dims& d : dims)
        for (auto dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
            INFO("B " << d.B << ", Hkv " << d.H << ", E " << d.E << ", Ev " << d.Ev << ", capacity " << d.capacity
                      << (dtype == xattn::CacheDtype::float16 ? ", float16" : ", float32"));
            xattn::KvCacheConfig cfg;
            cfg.batch = d.B, cfg.kv_heads = d.H, cfg.head_dim = d.E, cfg.value_dim = d.Ev, cfg.capacity = d.capacity;
            cfg.dtype = dtype;
            xattn::KvCache cache(cfg);
            // What the cache should hold: (B, Hkv, positions, E / Ev), as appended (float16: rounded).
            const auto stored = [&](xt::xarray<float> x) {
                if (dtype == xattn::CacheDtype::float16)
                    for (float& f : x) f = xattn::kernels::half_to_float(xattn::kernels::float_to_half(f));
                return x;
            };
            xt::xarray<float> want_k = xt::zeros<float>({d.B, d.H, std::size_t{0}, d.E});
            xt::xarray<float> want_v = xt::zeros<float>({d.B, d.H, std::size_t{0}, d.Ev});
            const auto append = [&](std::size_t n) {
                const auto k = randn({d.B, d.H, n, d.E}, seed++), v = randn({d.B, d.H, n, d.Ev}, seed++);
                cache.append(k, v);
                want_k = xt::concatenate(xt::xtuple(want_k, stored(k)), 2);
                want_v = xt::concatenate(xt::xtuple(want_v, stored(v)), 2);
            };
            // Fill in uneven steps, cut back to mid-block, then fill to capacity over what was cut.
            std::size_t filled = 0;
            for (std::size_t n : {std::size_t{1}, std::size_t{6}, std::size_t{11}, std::size_t{40}, std::size_t{200}}) {
                const std::size_t take = std::min(n, d.capacity - filled);
                if (take == 0) break;
                append(take);
                filled += take;
            }
            const std::size_t cut = filled / 2 + filled % 3;  // mid-block for most of the sizes above
            REQUIRE(cache.truncate(cut).ok());
            want_k = xt::eval(xt::view(want_k, xt::all(), xt::all(), xt::range(0, cut), xt::all()));
            want_v = xt::eval(xt::view(want_v, xt::all(), xt::all(), xt::range(0, cut), xt::all()));
            if (d.capacity > cut) append(d.capacity - cut);
            REQUIRE(cache.length() == d.capacity);
            CHECK(xt::all(xt::equal(cache.keys(), want_k)));
            CHECK(xt::all(xt::equal(cache.values(), want_v)));
        }
}

TEST_CASE("kv cache: refusals name the argument, and a refused append appends nothing") {
    xattn::KvCacheConfig cfg;
    cfg.batch = 2, cfg.kv_heads = 2, cfg.head_dim = 8, cfg.capacity = 10;
    xattn::KvCache cache(cfg);
    cache.append(randn({2, 2, 6, 8}, 1), randn({2, 2, 6, 8}, 2));
    CHECK_THROWS_WITH_AS(cache.append(randn({2, 2, 5, 8}, 3), randn({2, 2, 5, 8}, 4)),
                         "kv_cache: append: 5 positions do not fit: the cache holds 6 of its capacity 10; nothing was "
                         "appended (key (2, 2, 5, 8), value (2, 2, 5, 8))",
                         std::invalid_argument);
    CHECK(cache.length() == 6);
    CHECK_THROWS_WITH_AS(cache.append(randn({2, 2, 1, 7}, 3), randn({2, 2, 1, 8}, 4)),
                         doctest::Contains("key must be (B, Hkv, n, E) = (2, 2, n, 8)"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(cache.append(randn({2, 2, 0, 8}, 3), randn({2, 2, 0, 8}, 4)),
                         doctest::Contains("n must be at least 1"), std::invalid_argument);
    CHECK(cache.length() == 6);
    CHECK_FALSE(cache.truncate(7).ok());
    CHECK(cache.truncate(7).message() == "kv_cache: truncate: length 7 is past the 6 positions held");
    CHECK_THROWS_WITH_AS(cache.attend(randn({2, 3, 1, 8}, 5)),
                         doctest::Contains("Hq a multiple of the cache's 2 key/value heads, got shape (2, 3, 1, 8)"),
                         std::invalid_argument);
    xattn::KvAttendOptions o;
    o.attn_mask = xattn::Mask::boolean(xt::ones<bool>(Shape{1, 5}));
    CHECK_THROWS_WITH_AS(cache.attend(randn({2, 2, 1, 8}, 5), o),
                         doctest::Contains("kv_cache: attend: attn_mask shape (1, 5) does not broadcast"),
                         std::invalid_argument);
    xattn::KvCacheConfig bad = cfg;
    bad.capacity = 0;
    CHECK_THROWS_WITH_AS(xattn::KvCache{bad}, doctest::Contains("capacity must be positive"), std::invalid_argument);
    bad = cfg;
    bad.head_dim = 20000;
    CHECK_THROWS_WITH_AS(xattn::KvCache{bad}, doctest::Contains("head_dim and value_dim must be at most 16384"),
                         std::invalid_argument);
    // An empty cache: every row sees no key, as SDPA with S = 0 gives: zeros.
    xattn::KvCache empty(cfg);
    CHECK(xt::all(xt::equal(empty.attend(randn({2, 4, 1, 8}, 6)).output, 0.0f)));
}

TEST_CASE("kv cache: decoding keeps SDPA's rules for inf and NaN, float32 and float16") {
    for (const auto* set : xattn::kernels::available_kernels()) {
        xattn::kernels::use_kernels(set);
        for (auto dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
            const std::string label = std::string(set->name) + (dtype == xattn::CacheDtype::float16 ? " float16" : " float32");
            INFO(label);
            xattn::KvCacheConfig cfg;
            cfg.kv_heads = 2, cfg.head_dim = 8, cfg.capacity = 200, cfg.dtype = dtype;
            xattn::KvCache cache(cfg);
            auto k = randn({1, 2, 150, 8}, 70), v = randn({1, 2, 150, 8}, 71);
            v(0, 0, 100, 3) = std::numeric_limits<float>::infinity();    // a value row seen by every query of head 0
            k(0, 1, 20, 0) = std::numeric_limits<float>::quiet_NaN();    // a key of head 1
            cache.append(k, v);
            const auto q = randn({1, 4, 1, 8}, 72);
            const auto got = cache.attend(q);
            xattn::SdpaOptions so;
            so.enable_gqa = true;
            const auto want = xattn::scaled_dot_product_attention(q, cache.keys(), cache.values(), so);
            for (std::size_t i = 0; i < got.output.size(); ++i) {
                const float g = got.output.flat(i), w = want.output.flat(i);
                CHECK((std::isnan(g) == std::isnan(w)));
                if (!std::isnan(w) && g != w) CHECK(std::fabs(g - w) <= 1e-5 + 1e-4 * std::fabs(w));  // inf: equal
            }
        }
    }
    xattn::kernels::use_kernels(nullptr);
}

TEST_CASE("kv cache: a NaN key keeps the step NaN when a later key raises the max past exp's range") {
    // As for SDPA (tests/test_kernels.cpp): the rescaling by exp(-400) = 0 must not drop the NaN already summed.
    // 300 positions: one chunk of key tiles; 3000: three chunks, the big key in the first or the last.
    for (const auto& keys : {std::array<std::size_t, 2>{300, 200}, {3000, 500}, {3000, 2999}}) {
        const std::size_t S = keys[0], big = keys[1];  // not a structured binding: INFO captures them
        for (const auto* set : xattn::kernels::available_kernels()) {
            xattn::kernels::use_kernels(set);
            for (auto dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
                INFO((std::string(set->name) + (dtype == xattn::CacheDtype::float16 ? " float16" : " float32")) << " S=" << S
                               << " big key " << big);
                xattn::KvCacheConfig cfg;
                cfg.kv_heads = 1, cfg.head_dim = 4, cfg.value_dim = 2, cfg.capacity = S, cfg.dtype = dtype;
                xattn::KvCache cache(cfg);
                auto k = randn({1, 1, S, 4}, 80), v = randn({1, 1, S, 2}, 81);  // (B, Hkv, S, E), (B, Hkv, S, Ev)
                k(0, 0, 1, 2) = std::numeric_limits<float>::quiet_NaN();
                for (std::size_t e = 0; e < 4; ++e) k(0, 0, big, e) = 100.0f;
                cache.append(k, v);
                const auto q = xt::xarray<float>(xt::ones<float>({1, 3, 1, 4}));  // (B, Hq, L, E): 3 over 1
                CHECK(xt::all(xt::isnan(cache.attend(q).output)));
            }
        }
    }
    xattn::kernels::use_kernels(nullptr);
}

TEST_CASE("kv cache: float16 decoding gives, bit for bit, what a float32 cache holding the widened values gives") {
    // The decoding kernel reads float16 tiles in place, as bits with 2^112 folded into the query and the
    // probabilities, where the cache's flags say a tile is finite; other tiles (inf or NaN in them, E not whole
    // vectors, |q| >= 2^16) are widened first. Either way every product is the float32 one: the float32 cache
    // holding keys() and values() must agree exactly.
    struct Case {
        const char* name;
        std::size_t Hq, Hkv, E, Ev;
        float q_boost;  // multiplies query element 0: 1e5 takes the widening path for the whole problem
        bool special;   // an inf value and a NaN key in the middle, a huge value truncated away at the end
    };
    const Case cases[] = {
        {"GQA 4 rows, E 64", 8, 2, 64, 64, 1.0f, false},
        {"MHA, E 32, Ev 48", 3, 3, 32, 48, 1.0f, false},
        {"GQA 3 rows, E 16, inf and NaN tiles", 6, 2, 16, 16, 1.0f, true},
        {"E 12 (not whole vectors)", 4, 2, 12, 8, 1.0f, false},
        {"|q| past 2^16", 4, 2, 64, 64, 1e5f, true},
    };
    unsigned seed = 900;
    for (const auto* set : xattn::kernels::available_kernels()) {
        xattn::kernels::use_kernels(set);
        for (const Case& c : cases) {
            const std::string label = std::string(set->name) + ": " + c.name;
            INFO(label);
            xattn::KvCacheConfig cfg;
            cfg.kv_heads = c.Hkv, cfg.head_dim = c.E, cfg.value_dim = c.Ev, cfg.capacity = 400;
            cfg.dtype = xattn::CacheDtype::float16;
            xattn::KvCache half(cfg);
            auto k = randn({1, c.Hkv, 260, c.E}, seed++), v = randn({1, c.Hkv, 260, c.Ev}, seed++);
            if (c.special) {
                v(0, 0, 130, 1) = std::numeric_limits<float>::infinity();
                k(0, c.Hkv - 1, 70, 2) = std::numeric_limits<float>::quiet_NaN();
                v(0, 0, 255, 0) = 1e6f;  // rounds to a half inf; truncated below, so its tile reads in place again
            }
            half.append(k, v);
            REQUIRE(half.truncate(250).ok());
            const auto k2 = randn({1, c.Hkv, 3, c.E}, seed++), v2 = randn({1, c.Hkv, 3, c.Ev}, seed++);
            half.append(k2, v2);
            cfg.dtype = xattn::CacheDtype::float32;
            xattn::KvCache widened(cfg);
            widened.append(half.keys(), half.values());
            auto q = randn({1, c.Hq, 1, c.E}, seed++);
            q(0, 0, 0, 0) *= c.q_boost;
            const auto got = half.attend(q).output, want = widened.attend(q).output;
            std::size_t differ = 0, nans = 0;
            for (std::size_t i = 0; i < want.size(); ++i) {
                const float g = got.flat(i), w = want.flat(i);
                nans += std::isnan(w);
                if (std::isnan(g) != std::isnan(w) || (!std::isnan(w) && std::memcmp(&g, &w, 4) != 0)) ++differ;
            }
            CHECK(differ == 0);
            CHECK(nans < want.size());  // some rows are numbers, so the comparison means something
        }
    }
    xattn::kernels::use_kernels(nullptr);
}
