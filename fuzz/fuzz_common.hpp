// Helpers shared by the fuzz targets: decode shapes and options from the fuzzer's bytes, and
// stop loudly (a trap the fuzzer reports as a crash) when an invariant breaks.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include <cstdio>
#include <cstdlib>

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

}  // namespace fuzz
