// Seeded random inputs for the native suite: a seed gives the same tensor on every run and machine, so a
// failing case can be run again as it was.
#pragma once

#include <xtensor/xarray.hpp>
#include <xtensor/xrandom.hpp>

#include "xattn/dims.hpp"

namespace test_inputs {

// Standard normal floats of shape s.
inline xt::xarray<float> randn(const xattn::Shape& s, unsigned seed) {
    xt::random::seed(seed);
    return xt::random::randn<float>(s);
}

// Booleans of shape s, each true with probability p_true.
inline xt::xarray<bool> rand_bool(const xattn::Shape& s, double p_true, unsigned seed) {
    xt::random::seed(seed);
    return xt::random::rand<double>(s) < p_true;
}

}  // namespace test_inputs
