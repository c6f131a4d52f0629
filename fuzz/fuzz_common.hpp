// Helpers shared by the fuzz targets: decode shapes and options from the fuzzer's bytes, and
// stop loudly (a trap the fuzzer reports as a crash) when an invariant breaks.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include <cstdio>
#include <cstdlib>

#include "golden.hpp"
#include "reference/reference.hpp"
#include "xattn/xattn.hpp"

#define FUZZ_CHECK(cond, ...)                                   \
    do {                                                        \
        if (!(cond)) {                                          \
            std::fprintf(stderr, "invariant failed: %s: ", #cond); \
            std::fprintf(stderr, __VA_ARGS__);                  \
            std::fprintf(stderr, "\n");                         \
            __builtin_trap();                                   \
        }                                                       \
    } while (0)

namespace fuzz {

// Mostly small dims, sometimes zero or absurd ones that must be refused without overflow.
inline std::size_t dim(FuzzedDataProvider& in) {
    switch (in.ConsumeIntegralInRange<int>(0, 15)) {
        case 0: return 0;
        case 1: return std::size_t{1} << in.ConsumeIntegralInRange<int>(16, 63);
        case 2: return static_cast<std::size_t>(-1);
        default: return in.ConsumeIntegralInRange<std::size_t>(1, 9);
    }
}

inline double any_double(FuzzedDataProvider& in) {
    switch (in.ConsumeIntegralInRange<int>(0, 7)) {
        case 0: return std::numeric_limits<double>::quiet_NaN();
        case 1: return std::numeric_limits<double>::infinity();
        case 2: return -std::numeric_limits<double>::infinity();
        case 3: return 0.0;
        default: return in.ConsumeFloatingPointInRange<double>(-4.0, 4.0);
    }
}

inline xattn::SdpaSettings settings(FuzzedDataProvider& in) {
    xattn::SdpaSettings s;
    s.is_causal = in.ConsumeBool();
    s.causal_alignment = in.ConsumeBool() ? xattn::CausalAlignment::bottom_right : xattn::CausalAlignment::top_left;
    if (in.ConsumeBool()) s.scale = any_double(in);
    if (in.ConsumeBool()) s.dropout_p = in.ConsumeBool() ? any_double(in) : in.ConsumeProbability<double>() * 0.9;
    s.seed = in.ConsumeIntegral<std::uint64_t>();
    s.enable_gqa = in.ConsumeBool();
    s.need_weights = in.ConsumeBool();
    // The rules, valid or not: a soft-cap of any value, windows from -3 (refused) up, slopes and lengths of any
    // count (one in four the right one is a guess), lengths from -1 (refused) past any S, returned scores, halves.
    if (in.ConsumeBool()) s.softcap = any_double(in);
    if (in.ConsumeBool()) s.window = {in.ConsumeIntegralInRange<std::int64_t>(-3, 40), in.ConsumeIntegralInRange<std::int64_t>(-3, 40)};
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0)
        s.alibi_slopes.assign(in.ConsumeIntegralInRange<std::size_t>(1, 6), static_cast<float>(any_double(in)));
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
        s.key_lengths.resize(in.ConsumeIntegralInRange<std::size_t>(1, 6));
        for (auto& n : s.key_lengths) n = in.ConsumeIntegralInRange<std::int32_t>(-1, 12);
    }
    s.return_scores = static_cast<xattn::ScoresStage>(in.ConsumeIntegralInRange<int>(0, 3));
    s.float16_io = in.ConsumeBool();
    return s;
}

// The rules for a valid call of query (B, H, L, ·) over S keys, each often off: a soft-cap, a window (sides up
// to past L + S), ALiBi's slopes (one per head), key lengths in [0, S] (one per batch element).
template <class Options>
void rules(FuzzedDataProvider& in, std::size_t B, std::size_t H, std::size_t L, std::size_t S, Options& o) {
    if (in.ConsumeIntegralInRange<int>(0, 2) == 0) o.softcap = in.ConsumeFloatingPointInRange<double>(0.3, 8.0);
    if (in.ConsumeBool()) {
        const auto side = [&] {
            return in.ConsumeIntegralInRange<int>(0, 3) == 0 ? std::int64_t{-1}
                                                             : in.ConsumeIntegralInRange<std::int64_t>(0, static_cast<std::int64_t>(L + S));
        };
        o.window = {side(), side()};
    }
    if (in.ConsumeIntegralInRange<int>(0, 2) == 0)
        for (std::size_t h = 0; h < H; ++h) o.alibi_slopes.push_back(in.ConsumeFloatingPointInRange<float>(-0.5f, 0.5f));
    if (in.ConsumeIntegralInRange<int>(0, 2) == 0)
        for (std::size_t b = 0; b < B; ++b)
            o.key_lengths.push_back(static_cast<std::int32_t>(in.ConsumeIntegralInRange<std::size_t>(0, S)));
}

// Whether key j is visible to row i of batch element n under the rules of `o` (xattn/sdpa.hpp, written again).
inline bool rule_visible(const xattn::SdpaSettings& o, std::size_t n, std::size_t L, std::size_t S, std::size_t i,
                         std::size_t j) {
    const std::int64_t len = o.key_lengths.empty() ? static_cast<std::int64_t>(S) : o.key_lengths[n];
    const std::int64_t p = static_cast<std::int64_t>(i) +
                           (o.causal_alignment == xattn::CausalAlignment::bottom_right ? len - static_cast<std::int64_t>(L) : 0);
    const std::int64_t key = static_cast<std::int64_t>(j);
    return key < len && !(o.is_causal && key > p) && !(o.window.left >= 0 && key < p - o.window.left) &&
           !(o.window.right >= 0 && key > p + o.window.right);
}

// The suite's golden tolerance (tests/golden.hpp): |got - want| <= kAtol + kRtol·|want|. (Gradients, and
// references that carry the sizes of their terms, use golden::within_reference.)
inline bool within(double got, double want) {
    return std::fabs(got - want) <= golden::kAtol + golden::kRtol * std::fabs(want);
}

// A value drawn from `rng` (the data of a problem, seeded by the fuzzer's bytes): mostly in [-2, 2]; with
// `extreme`, one in 12 is NaN, ±inf, huge or subnormal.
inline float draw(std::mt19937& rng, bool extreme) {
    const std::uint32_t r = rng();
    if (extreme && r % 12 == 0) {
        static const float special[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                        -std::numeric_limits<float>::infinity(), 1e30f, -3e20f, 70000.0f,
                                        std::numeric_limits<float>::denorm_min() * 77};
        return special[(r / 12) % (sizeof special / sizeof special[0])];
    }
    return static_cast<float>(static_cast<double>(r >> 8) / double(1 << 24) * 4.0 - 2.0);
}

// Moderate values, as draw() makes them without `extreme`: where the float64 reference and the kernels must agree.
inline bool tame(float x) { return std::fabs(x) <= 2.0f; }

inline bool all_tame(const float* begin, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (!tame(begin[i])) return false;
    return true;
}

inline bool all_tame(const xt::xarray<float>& x) { return all_tame(x.data(), x.size()); }

inline xt::xarray<float> random_tensor(std::mt19937& rng, const xattn::Shape& shape, bool extreme) {
    xt::xarray<float> t = xt::xarray<float>::from_shape(shape);
    for (float& x : t) x = draw(rng, extreme);
    return t;
}

inline bool same_bits(const xt::xarray<float>& a, const xt::xarray<float>& b) {
    return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace fuzz
