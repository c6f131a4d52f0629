// A program that only knows xattn's public headers and its xattn::xattn target. It checks results it can
// derive by hand: with an all-zero query every score is 0, so each weight is 1/S and each output row is the
// mean of the value rows; a MultiheadAttention's weights sum to 1 per row. It includes no xtensor header itself:
// xt::xarray comes through xattn's, in whichever layout the xtensor found has (scripts/test-consumer.sh builds it
// against both).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <xattn/xattn.hpp>

// The build against xtensor's 0.26+ layout is C++20, as xtensor 0.27 requires.
#ifdef XATTN_CONSUMER_MIN_CPLUSPLUS
static_assert(__cplusplus >= XATTN_CONSUMER_MIN_CPLUSPLUS, "the consumer is not compiled in the C++ standard asked");
#endif

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "consumer: FAILED: %s\n", what);
        ++failures;
    }
}

// Values in [-1, 1) from a fixed linear congruential sequence.
xt::xarray<float> sequence(const std::vector<std::size_t>& shape, std::uint32_t seed) {
    xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
    for (float& x : a) {
        seed = seed * 1664525u + 1013904223u;
        x = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.0f;
    }
    return a;
}

xt::xarray<float> zeros(const std::vector<std::size_t>& shape) {
    xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
    a.fill(0.0f);
    return a;
}

template <class Shape>
bool shape_is(const Shape& shape, std::vector<std::size_t> want) {
    return std::vector<std::size_t>(shape.begin(), shape.end()) == want;
}

}  // namespace

int main() {
    expect(std::strcmp(xattn::version(), XATTN_EXPECTED_VERSION) == 0, "xattn::version() is the package's version");

    const std::size_t B = 2, L = 3, S = 5, E = 4, Ev = 6;
    const xt::xarray<float> query = zeros({B, L, E});
    const xt::xarray<float> key = sequence({B, S, E}, 1);
    const xt::xarray<float> value = sequence({B, S, Ev}, 2);
    xattn::SdpaOptions options;
    options.need_weights = true;
    const xattn::AttentionResult r = xattn::scaled_dot_product_attention(query, key, value, options);
    expect(shape_is(r.output.shape(), {B, L, Ev}), "SDPA output shape (B, L, Ev)");
    expect(shape_is(r.weights.shape(), {B, L, S}), "SDPA weights shape (B, L, S)");
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < L; ++i) {
            for (std::size_t j = 0; j < S; ++j) {
                expect(std::abs(r.weights(b, i, j) - 1.0f / S) < 1e-6f, "uniform weights 1/S");
            }
            for (std::size_t d = 0; d < Ev; ++d) {
                double mean = 0;
                for (std::size_t j = 0; j < S; ++j) mean += value(b, j, d);
                mean /= S;
                expect(std::abs(r.output(b, i, d) - mean) < 1e-5, "output row = mean of the value rows");
            }
        }
    }

    bool refused = false;
    try {
        xattn::scaled_dot_product_attention(query, sequence({B, S, E + 1}, 3), value);
    } catch (const std::invalid_argument&) {
        refused = true;
    }
    expect(refused, "a key of the wrong last dim is refused with std::invalid_argument");

    xattn::MhaConfig config;
    config.embed_dim = 8;
    config.num_heads = 2;
    xattn::MultiheadAttention mha(config);
    const xt::xarray<float> x = sequence({L, B, 8}, 4);
    const xattn::AttentionResult y = mha.forward(x, x, x);
    expect(shape_is(y.output.shape(), {L, B, 8}), "MultiheadAttention output shaped like the query (L, N, E)");
    expect(shape_is(y.weights.shape(), {B, L, L}), "MultiheadAttention weights (N, L, S)");
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < L; ++i) {
            double sum = 0;
            for (std::size_t j = 0; j < L; ++j) sum += y.weights(b, i, j);
            expect(std::abs(sum - 1.0) < 1e-5, "MultiheadAttention weight rows sum to 1");
        }
    }

    if (failures == 0) {
        std::printf("consumer: xattn %s works through %s (__cplusplus %ld)\n", xattn::version(), XATTN_CONSUMER_VIA,
                    static_cast<long>(__cplusplus));
    }
    return failures == 0 ? 0 : 1;
}
