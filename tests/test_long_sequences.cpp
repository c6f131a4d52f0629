// Accuracy that does not decay with the number of keys: the running sums of the softmax (its denominator) and
// of P · V are carried across key tiles with Kahan compensation, so a million keys cost no more accuracy than
// one tile. Every kernel set, both paths (streaming, weights), and the KV cache's decoding kernel, against the
// float64 reference computed from the same float32 inputs.
#include <doctest/doctest.h>

#include <cmath>


#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "random_inputs.hpp"

namespace {

using xattn::Shape;

using test_inputs::randn;

// max |got − want| / max |want|, want in float64.
double relative_error(const xt::xarray<float>& got, const xt::xarray<double>& want) {
    double err = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        err = std::max(err, std::fabs(static_cast<double>(got.flat(i)) - want.flat(i)));
        scale = std::max(scale, std::fabs(want.flat(i)));
    }
    return err / scale;
}

constexpr double kLimit = 5e-6;

}  // namespace

TEST_CASE("long sequences: the relative error stays under 5e-6 up to 1,048,576 keys, every set and path") {
    for (const std::size_t S : {32768, 131072, 1048576}) {
        const auto q = randn({1, 1, 16}, 1), k = randn({1, S, 16}, 2), v = randn({1, S, 16}, 3);
        const auto want = xattn::reference_sdpa_f64(xt::xarray<double>(q), xt::xarray<double>(k), xt::xarray<double>(v)).output;
        for (const auto* set : xattn::kernels::available_kernels()) {
            xattn::kernels::use_kernels(set);
            for (const bool weights : {false, true}) {
                xattn::SdpaOptions o;
                o.need_weights = weights;
                const double err = relative_error(xattn::scaled_dot_product_attention(q, k, v, o).output, want);
                const std::string label = std::string(set->name) + " S=" + std::to_string(S) +
                                          (weights ? " weights" : " streaming") + " relative error " + std::to_string(err);
                INFO(label);
                CHECK(err <= kLimit);
            }
        }
        xattn::kernels::use_kernels(nullptr);
        // The KV cache's decoding kernel over the same keys.
        xattn::KvCacheConfig cfg;
        cfg.kv_heads = 1, cfg.head_dim = 16, cfg.capacity = S;
        xattn::KvCache cache(cfg);
        xt::xarray<float> k4 = k, v4 = v, q4 = q;  // (1, Hkv = 1, S, E), (1, Hq = 1, 1, E)
        k4.reshape({1, 1, S, 16}), v4.reshape({1, 1, S, 16}), q4.reshape({1, 1, 1, 16});
        cache.append(k4, v4);
        const double err = relative_error(cache.attend(q4).output, want);
        const std::string label = "kv cache S=" + std::to_string(S) + " relative error " + std::to_string(err);
        INFO(label);
        CHECK(err <= kLimit);
    }
}

TEST_CASE("long sequences: uniform weights over 2,000,000 keys average a constant value exactly") {
    // Every score 0: each weight is 1/S, tiny beside the running sum it is added to, the worst case for a
    // plain float32 sum (which returned 0.4907 for 0.5 here).
    const std::size_t S = 2000000;
    const xt::xarray<float> q = xt::zeros<float>({1, 1, 8}), k = xt::zeros<float>(Shape{1, S, 8});
    const xt::xarray<float> v = xt::zeros<float>(Shape{1, S, 8}) + 0.5f;
    for (const auto* set : xattn::kernels::available_kernels()) {
        xattn::kernels::use_kernels(set);
        for (const bool weights : {false, true}) {
            xattn::SdpaOptions o;
            o.need_weights = weights;
            const auto r = xattn::scaled_dot_product_attention(q, k, v, o);
            const std::string label = std::string(set->name) + (weights ? " weights: " : " streaming: ") +
                                      std::to_string(r.output(0, 0, 0));
            INFO(label);
            CHECK(std::fabs(r.output(0, 0, 0) - 0.5) <= 0.5 * kLimit);
            if (weights) {
                double total = 0.0;  // in float64: the check's own sum must not be the one that drifts
                for (const float x : r.weights) total += x;
                CHECK(std::fabs(total - 1.0) <= 1e-5);
            }
        }
    }
    xattn::kernels::use_kernels(nullptr);
}

TEST_CASE("long sequences: values large enough to overflow the running sums give inf, never NaN") {
    // Equal scores over 400 keys (five tiles) of values 1e38: the unnormalised sum passes float32's largest
    // value after a few keys. The compensation must not turn that inf into NaN (inf − inf) in later tiles.
    const std::size_t S = 400;
    const xt::xarray<float> q = xt::zeros<float>(Shape{1, 1, 4}), k = xt::zeros<float>(Shape{1, S, 4});
    for (const auto* set : xattn::kernels::available_kernels()) {
        xattn::kernels::use_kernels(set);
        for (const bool weights : {false, true}) {
            xattn::SdpaOptions o;
            o.need_weights = weights;
            const std::string label = std::string(set->name) + (weights ? " weights" : " streaming");
            INFO(label);
            const xt::xarray<float> huge = xt::zeros<float>(Shape{1, S, 4}) + 1e38f;
            for (const float x : xattn::scaled_dot_product_attention(q, k, huge, o).output) CHECK_FALSE(std::isnan(x));
            // Large but harmless values keep the fast form and stay exact.
            const xt::xarray<float> large = xt::zeros<float>(Shape{1, S, 4}) + 1e30f;
            for (const float x : xattn::scaled_dot_product_attention(q, k, large, o).output)
                CHECK(std::fabs(x - 1e30f) <= 1e30f * 1e-6f);
        }
    }
    xattn::kernels::use_kernels(nullptr);
}
