// Fuzzes MultiheadAttention's values, forward and backward, on random modules and calls: a random kernel set,
// embed_dim and heads, kdim / vdim, bias, batch_first or unbatched, add_bias_kv, add_zero_attn, dropout in
// training, random parameters, key padding and attention masks (boolean or float, (L, S) or per head), is_causal,
// need_weights and average_attn_weights, with moderate values or with NaN, ±inf, huge and subnormal ones.
//   every call:   the output, the weights and every gradient (inputs and parameters) are the same bits at 1, 2
//                 and 3 threads, with the helpers woken for any work, so that projections, heads and the
//                 backward all split
//   tame calls:   where inputs, parameters, masks and grad_output hold only moderate values (and a mask's
//                 -inf), all of them agree with the float64 reference (tests/reference/reference_mha.cpp, itself
//                 checked against PyTorch's fixtures) within the golden tolerance plus one float32 unit roundoff
//                 of the sizes of the terms each result sums (why: fuzz_backward.cpp's Bounds)
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"
#include "reference/reference_mha.hpp"

namespace {

using fuzz::all_tame;
using fuzz::random_tensor;
using fuzz::same_bits;
using fuzz::tame;

struct Run {
    xattn::AttentionResult forward;
    xattn::MhaGradientResult backward;
};

bool same_run(const Run& a, const Run& b) {
    if (!same_bits(a.forward.output, b.forward.output) || !same_bits(a.forward.weights, b.forward.weights) ||
        !same_bits(a.backward.output, b.backward.output) || !same_bits(a.backward.grad_query, b.backward.grad_query) ||
        !same_bits(a.backward.grad_key, b.backward.grad_key) || !same_bits(a.backward.grad_value, b.backward.grad_value))
        return false;
    for (const auto& [name, grad] : a.backward.grad_parameters)
        if (!same_bits(grad, b.backward.grad_parameters.at(name))) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const auto sets = xattn::kernels::available_kernels();
    const xattn::kernels::KernelSet* set = sets[in.ConsumeIntegralInRange<std::size_t>(0, sets.size() - 1)];

    // The module. Head dims around the kernels' vector widths; kdim / vdim of their own, or E.
    const std::size_t head_dims[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17};
    xattn::MhaConfig c;
    c.num_heads = in.ConsumeIntegralInRange<std::size_t>(1, 4);
    c.embed_dim = c.num_heads * head_dims[in.ConsumeIntegralInRange<std::size_t>(0, 9)];
    c.kdim = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::size_t>(1, 20) : 0;
    c.vdim = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::size_t>(1, 20) : 0;
    c.bias = in.ConsumeBool();
    c.batch_first = in.ConsumeBool();
    c.add_bias_kv = in.ConsumeBool();
    c.add_zero_attn = in.ConsumeBool();
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) c.dropout = in.ConsumeProbability<double>() * 0.8;
    c.init_seed = in.ConsumeIntegral<std::uint32_t>();
    xattn::MultiheadAttention mha(c);
    const std::size_t E = c.embed_dim, H = c.num_heads, kd = mha.kdim(), vd = mha.vdim();
    const bool extreme = in.ConsumeBool();
    std::mt19937 rng(in.ConsumeIntegral<std::uint32_t>());
    // Half the time every parameter is drawn (the default leaves the biases 0), scaled by 1/√fan_in so that the
    // projections stay moderate; with `extreme`, specials among them.
    bool params_tame = true;
    if (in.ConsumeBool())
        for (const auto& [name, offset, shape] : mha.parameters()) {
            xt::xarray<float> p = random_tensor(rng, shape, extreme);
            const float fan_in = static_cast<float>(shape.back());
            for (float& x : p) x = tame(x) ? x / std::sqrt(fan_in) : x;
            params_tame = params_tame && all_tame(p);
            mha.set_parameter(name, p);
        }

    // The call: batched (N up to 3) or unbatched; mostly short, one in four crossing the kernels' query groups
    // and key tiles, within about 150k products for the reference.
    const bool batched = in.ConsumeIntegralInRange<int>(0, 3) != 0;
    const std::size_t N = batched ? in.ConsumeIntegralInRange<std::size_t>(1, 3) : 1;
    const bool far = in.ConsumeIntegralInRange<int>(0, 3) == 0;
    std::size_t L = in.ConsumeIntegralInRange<std::size_t>(1, far ? 70 : 17);
    std::size_t S = in.ConsumeIntegralInRange<std::size_t>(1, far ? 150 : 33);
    const std::size_t widest = std::max({E, kd, vd});
    while (N * (L * (S + 2) * E + (L + S) * E * widest) > 150000) {
        if (L > 1) L /= 2;
        else S = S / 2 + 1;
    }
    auto shape_of = [&](std::size_t T, std::size_t C) {
        return !batched ? xattn::Shape{T, C} : c.batch_first ? xattn::Shape{N, T, C} : xattn::Shape{T, N, C};
    };
    const xt::xarray<float> q = random_tensor(rng, shape_of(L, E), extreme);   // (L, N, E) / (N, L, E) / (L, E)
    const xt::xarray<float> k = random_tensor(rng, shape_of(S, kd), extreme);  // (S, N, kdim) ...
    const xt::xarray<float> v = random_tensor(rng, shape_of(S, vd), extreme);  // (S, N, vdim) ...
    const xt::xarray<float> dO = random_tensor(rng, shape_of(L, E), extreme);  // like the output

    // Masks in MHA polarity: a true boolean ignores the key; a float is added (one in four -inf).
    bool masks_tame = true;
    auto mask = [&](const xattn::Shape& shape) {
        if (in.ConsumeBool()) {
            xt::xarray<bool> m = xt::xarray<bool>::from_shape(shape);
            for (auto&& x : m) x = rng() % 4 == 0;
            return xattn::Mask::boolean(m);
        }
        xt::xarray<float> m = random_tensor(rng, shape, extreme);
        for (float& x : m) x = rng() % 4 == 0 ? -std::numeric_limits<float>::infinity() : x;
        for (float x : m) masks_tame = masks_tame && (tame(x) || x == -std::numeric_limits<float>::infinity());
        return xattn::Mask::additive(m);
    };
    xattn::MhaForwardOptions o;
    if (in.ConsumeBool()) o.key_padding_mask = mask(batched ? xattn::Shape{N, S} : xattn::Shape{S});
    if (in.ConsumeBool()) o.attn_mask = mask(in.ConsumeBool() ? xattn::Shape{L, S} : xattn::Shape{N * H, L, S});
    o.is_causal = in.ConsumeBool();
    o.need_weights = in.ConsumeBool();
    o.average_attn_weights = in.ConsumeBool();
    o.training = in.ConsumeBool();
    o.seed = in.ConsumeIntegral<std::uint32_t>();

    xattn::kernels::use_kernels(set);
    xattn::kernels::set_min_work_per_worker(0.0);
    Run got[3];
    for (unsigned t = 1; t <= 3; ++t) {
        xattn::set_num_threads(t);
        got[t - 1] = {mha.forward(q, k, v, o), mha.backward(q, k, v, dO, o)};
        FUZZ_CHECK(t == 1 || same_run(got[t - 1], got[0]),
                   "%s at %u threads differs from 1 thread (E %zu, H %zu, kdim %zu, vdim %zu, N %zu, L %zu, S %zu)",
                   set->name, t, E, H, kd, vd, N, L, S);
    }
    xattn::set_num_threads(1);
    xattn::kernels::use_kernels(nullptr);
    if (!(params_tame && masks_tame && all_tame(q) && all_tame(k) && all_tame(v) && all_tame(dO))) return 0;

    const xattn::ReferenceMha want = xattn::reference_mha(mha, q, k, v, o, &dO);
    const auto compare = [&](const xt::xarray<float>& g, const xt::xarray<double>& w, const xt::xarray<double>& terms,
                             double atol, double rtol, const std::string& what) {
        FUZZ_CHECK(g.size() == w.size(), "%s %s: %zu values, reference %zu", set->name, what.c_str(), g.size(), w.size());
        for (std::size_t i = 0; i < g.size(); ++i)
            FUZZ_CHECK(golden::within_reference(g.data()[i], w.data()[i], terms.data()[i], atol, rtol),
                       "%s %s %zu: %g, reference %g, terms %g (E %zu, H %zu, kdim %zu, vdim %zu, N %zu, L %zu, S %zu, "
                       "bias_kv %d, zero_attn %d, causal %d, dropout %g)",
                       set->name, what.c_str(), i, g.data()[i], w.data()[i], terms.data()[i], E, H, kd, vd, N, L, S,
                       c.add_bias_kv, c.add_zero_attn, o.is_causal, o.training ? c.dropout : 0.0);
    };
    const Run& r = got[0];
    compare(r.forward.output, want.value.output, want.terms.output, golden::kAtol, golden::kRtol, "output");
    if (o.need_weights)
        compare(r.forward.weights, want.value.weights, want.terms.weights, golden::kAtol, golden::kRtol, "weights");
    const double ga = golden::kGradAtol, gr = golden::kGradRtol;
    compare(r.backward.output, want.value.output, want.terms.output, ga, gr, "backward's output");
    compare(r.backward.grad_query, want.value.grad_query, want.terms.grad_query, ga, gr, "grad_query");
    compare(r.backward.grad_key, want.value.grad_key, want.terms.grad_key, ga, gr, "grad_key");
    compare(r.backward.grad_value, want.value.grad_value, want.terms.grad_value, ga, gr, "grad_value");
    FUZZ_CHECK(r.backward.grad_parameters.size() == want.value.grad_parameters.size(), "%s: %zu parameter gradients, reference %zu",
               set->name, r.backward.grad_parameters.size(), want.value.grad_parameters.size());
    for (const auto& [name, grad] : r.backward.grad_parameters)
        compare(grad, want.value.grad_parameters.at(name), want.terms.grad_parameters.at(name), ga, gr, "grad " + name);
    return 0;
}
