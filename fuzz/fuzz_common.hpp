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
    return s;
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
