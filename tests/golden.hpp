// Reads the PyTorch-made fixtures in tests/golden/*.txt (format: see make_golden.py) and
// compares results with the suite's tolerance.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xview.hpp>

#include "reference/reference.hpp"
#include "xattn/xattn.hpp"

namespace golden {

struct Tensor {
    std::string dtype;  // f32, f64 or bool
    xattn::Shape shape;
    std::vector<double> values;

    xt::xarray<float> f32() const;
    xt::xarray<bool> boolean() const;
    // The mask a fixture holds, as xattn's owning Mask (bool or additive).
    xattn::Mask mask() const;
};

struct Case {
    std::string name, op;
    std::map<std::string, std::string> opts;
    std::map<std::string, Tensor> tensors;

    bool has(const std::string& tensor) const { return tensors.count(tensor) != 0; }
    const Tensor& at(const std::string& tensor) const;
    bool flag(const std::string& key) const;  // absent = false
    std::size_t size(const std::string& key) const;
};

// All cases of tests/golden/<file>, in file order; throws if it cannot be read.
const std::vector<Case>& cases(const std::string& file);
const Case& find(const std::string& file, const std::string& name);

// The tolerance every golden comparison uses: |got - want| <= 1e-5 + 1e-4·|want|, NaN only where NaN.
constexpr double kAtol = 1e-5, kRtol = 1e-4;
// The gradient fixtures' tolerance (SDPA and MultiheadAttention backward): |got - want| <= 2e-5 + 2e-4·|want|.
constexpr double kGradAtol = 2e-5, kGradRtol = 2e-4;

// Whether a float32 result `got` agrees with a float64 reference's `want`, made of terms whose sizes sum to
// `terms` (tests/reference/reference_mha.hpp and fuzz_backward's bounds give them): |got − want| ≤ atol +
// rtol·|want|, plus one float32 unit roundoff (2^-24) of `terms` for rounding where terms cancel. NaN agrees
// with nothing.
inline bool within_reference(double got, double want, double terms, double atol, double rtol) {
    return std::fabs(got - want) <= atol + std::ldexp(terms, -24) + rtol * std::fabs(want);
}

struct Mismatch {
    bool ok = true;
    std::string detail;  // shape difference or the worst element
};
Mismatch compare(const xt::xarray<float>& got, const Tensor& want, double atol = kAtol, double rtol = kRtol);
Mismatch compare(const xt::xarray<float>& got, const xt::xarray<float>& want, double atol = kAtol,
                 double rtol = kRtol);

// Runs an "sdpa" case through the API (or the reference) with the case's options.
xattn::SdpaOptions sdpa_options(const Case& c);
// Builds a MultiheadAttention with the case's configuration and parameters.
xattn::MultiheadAttention make_mha(const Case& c);
xattn::MhaForwardOptions mha_options(const Case& c);
// doctest checks of a MultiheadAttention backward's result against an mha_grad.txt case: the output, the inputs'
// gradients and every parameter's (none the case lacks), at the gradient tolerance.
void check_mha_gradients(const xattn::MhaGradientResult& r, const Case& c);

}  // namespace golden

// doctest check that names the fixture and the worst element on failure.
#define CHECK_CLOSE(got, want, label)                                  \
    do {                                                               \
        const auto mismatch_ = golden::compare((got), (want));         \
        CHECK_MESSAGE(mismatch_.ok, (label) << ": " << mismatch_.detail); \
    } while (0)

// The same with the gradient tolerance.
#define CHECK_GRAD(got, want, label)                                                  \
    do {                                                                              \
        const auto mismatch_ = golden::compare((got), (want), golden::kGradAtol, golden::kGradRtol); \
        CHECK_MESSAGE(mismatch_.ok, (label) << ": " << mismatch_.detail);             \
    } while (0)
