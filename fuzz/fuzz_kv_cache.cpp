// Fuzzes the KV cache as a decoder drives it: a cache of random configuration (rolling or not, rotary keys or
// not), then a run of appends (each batch element its own count, or all the same), truncations (per element or
// all) and attends (some of each refused), checked after every call against a model of what the cache should hold
// (per element, the last positions appended, oldest first, keys turned by their positions, rounded to float16 for
// a float16 cache).
//   every call:        the lengths are the model's; a refused call changes nothing
//   keys(), values():  the model's K (B, Hkv, length, E) and V (B, Hkv, length, Ev), zero past an element's
//                      length, bit for bit
//   attend:            refused exactly where SDPA on the held K and V (enable_gqa, bottom-right alignment, the
//                      elements' lengths as key_lengths, the same rules) is; the same bits at 1, 2 and 3 threads
//                      (key chunks of a long cache merged in a fixed order, helpers woken for any work, so that
//                      short caches are split too); moderate values: SDPA and (small problems) the float64
//                      reference within the golden tolerance; any values: NaN and ±inf exactly where SDPA on the
//                      held K and V (the tiled kernels) has them
//   float16 I/O:       one append in three gives its keys and values as IEEE halves (uint16): held as their widened
//                      floats; one attend in three takes a query of halves: its output and weights (the uint16
//                      run_attend) are the float32 attend's rounded once, bit for bit (a NaN quiet, of either sign).
//                      Which calls do is drawn from the data's generator, so the seed corpus keeps its meaning
// Caches are mostly a few positions long, sometimes past 2048, where a decoding step splits its keys in chunks.
#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "fuzz_common.hpp"
#include "kernels/half.hpp"
#include "kernels/parallel.hpp"

namespace {

// What the cache should hold: per problem (B·Hkv of them), oldest first, E key and Ev value floats a position;
// per element the positions appended in all.
struct Model {
    std::size_t B, Hkv, E, Ev, capacity;
    bool rolling;
    std::vector<std::vector<float>> keys, values;  // (B·Hkv) of (held, E) and (held, Ev)
    std::vector<std::size_t> appended;             // (B)
    std::size_t held(std::size_t b) const { return keys[b * Hkv].size() / E; }
    std::size_t length() const {
        std::size_t n = 0;
        for (std::size_t b = 0; b < B; ++b) n = std::max(n, held(b));
        return n;
    }
    std::vector<std::int32_t> lengths() const {
        std::vector<std::int32_t> l;
        for (std::size_t b = 0; b < B; ++b) l.push_back(static_cast<std::int32_t>(held(b)));
        return l;
    }
    xt::xarray<float> tensor(const std::vector<std::vector<float>>& of, std::size_t D) const {
        xt::xarray<float> t = xt::zeros<float>({B, Hkv, length(), D});  // (B, Hkv, length, D)
        for (std::size_t p = 0; p < B * Hkv; ++p) std::copy(of[p].begin(), of[p].end(), t.data() + p * length() * D);
        return t;
    }
};

using fuzz::random_tensor;
using fuzz::same_bits;
using xattn::kernels::float_to_half;
using xattn::kernels::half_to_float;

// x rounded to IEEE halves and widened back: what a tensor given as halves holds.
xt::xarray<float> widened_halves(xt::xarray<float> x) {
    for (float& f : x) f = half_to_float(float_to_half(f));
    return x;
}

// The halves of x (every value already one: widened_halves'), as the uint16 calls take them.
std::vector<std::uint16_t> bits_of_halves(const xt::xarray<float>& x) {
    std::vector<std::uint16_t> h(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) h[i] = float_to_half(x.data()[i]);
    return h;
}

// Whether the halves `got` are `want` rounded once (a NaN: the quiet NaN of either sign); the first that is not.
std::size_t first_unrounded(const std::vector<std::uint16_t>& got, const xt::xarray<float>& want) {
    for (std::size_t i = 0; i < got.size(); ++i) {
        const float w = want.data()[i];
        if (std::isnan(w) ? (got[i] & 0x7fffu) != 0x7e00u : got[i] != float_to_half(w)) return i;
    }
    return got.size() == want.size() ? SIZE_MAX : 0;
}

void check_holds(const xattn::KvCache& cache, const Model& model) {
    FUZZ_CHECK(cache.length() == model.length(), "length %zu, model %zu", cache.length(), model.length());
    for (std::size_t b = 0; b < model.B; ++b)
        FUZZ_CHECK(cache.length(b) == model.held(b) && cache.position(b) == model.appended[b],
                   "element %zu holds %zu of %zu, model %zu of %zu", b, cache.length(b), cache.position(b), model.held(b),
                   model.appended[b]);
    FUZZ_CHECK(same_bits(cache.keys(), model.tensor(model.keys, model.E)), "keys() differ from what was appended");
    FUZZ_CHECK(same_bits(cache.values(), model.tensor(model.values, model.Ev)), "values() differ from what was appended");
}

void append(FuzzedDataProvider& in, std::mt19937& rng, bool extreme, xattn::KvCache& cache, Model& model) {
    std::size_t room = cache.capacity();  // what every element can take
    for (std::size_t b = 0; b < model.B; ++b)
        room = std::min(room, model.rolling ? cache.capacity() : cache.capacity() - model.held(b));
    const int kind = in.ConsumeIntegralInRange<int>(0, 9);
    std::size_t n = kind == 0 ? room + in.ConsumeIntegralInRange<std::size_t>(0, 2)  // fill it, or one or two too many
                              : in.ConsumeIntegralInRange<std::size_t>(0, 4);
    if (kind == 1 && room > 0) n = room / 2 + 1;  // a prefill of half what is left
    const bool bad_shape = kind == 2;
    const std::size_t E = model.E + (bad_shape ? 1 : 0);
    xt::xarray<float> k = random_tensor(rng, {model.B, model.Hkv, n, E}, extreme);             // (B, Hkv, n, E)
    xt::xarray<float> v = random_tensor(rng, {model.B, model.Hkv, n, model.Ev}, extreme);      // (B, Hkv, n, Ev)
    const bool halves = rng() % 3 == 0;  // given as IEEE halves: the model holds what they widen to
    if (halves) k = widened_halves(k), v = widened_halves(v);
    // Each element its own count one time in three (at most n; one in eight of those past it: refused).
    std::vector<std::int32_t> counts;
    if (in.ConsumeIntegralInRange<int>(0, 2) == 0)
        for (std::size_t b = 0; b < model.B; ++b)
            counts.push_back(static_cast<std::int32_t>(in.ConsumeIntegralInRange<std::size_t>(0, n + (in.ConsumeIntegralInRange<int>(0, 7) == 0))));
    bool fits = !bad_shape && n >= 1;
    for (std::size_t b = 0; b < model.B; ++b) {
        const std::size_t count = counts.empty() ? n : static_cast<std::size_t>(counts[b]);
        fits = fits && count <= n && count <= (model.rolling ? cache.capacity() : cache.capacity() - model.held(b));
    }
    if (halves) {
        const std::vector<std::uint16_t> hk = bits_of_halves(k), hv = bits_of_halves(v);
        const xattn::Status st = cache.append(xattn::Shape(k.shape().begin(), k.shape().end()), hk.data(),
                                              xattn::Shape(v.shape().begin(), v.shape().end()), hv.data(),
                                              counts.empty() ? nullptr : counts.data());
        if (!st.ok()) {
            FUZZ_CHECK(!fits, "a valid append of %zu positions as halves (room %zu) refused: %s", n, room, st.message().c_str());
            FUZZ_CHECK(st.message().rfind("kv_cache: append: ", 0) == 0, "message: %s", st.message().c_str());
            return;
        }
    } else {
        try {
            cache.append(k, v, counts);
        } catch (const std::invalid_argument& e) {
            FUZZ_CHECK(!fits, "a valid append of %zu positions (room %zu) refused: %s", n, room, e.what());
            FUZZ_CHECK(std::strstr(e.what(), "kv_cache: append: ") == e.what(), "message: %s", e.what());
            return;
        }
    }
    FUZZ_CHECK(fits, "an append of %zu positions (room %zu, bad shape %d) accepted", n, room, int(bad_shape));
    const bool half = cache.config().dtype == xattn::CacheDtype::float16;
    const auto held = [half](float x) { return half ? xattn::kernels::half_to_float(xattn::kernels::float_to_half(x)) : x; };
    const auto& rotary = cache.config().rotary;
    std::vector<float> row(model.E);
    for (std::size_t b = 0; b < model.B; ++b) {
        const std::size_t count = counts.empty() ? n : static_cast<std::size_t>(counts[b]);
        for (std::size_t h = 0; h < model.Hkv; ++h) {
            const std::size_t p = b * model.Hkv + h;
            for (std::size_t t = 0; t < count; ++t) {
                const float* key = k.data() + (p * n + t) * model.E;
                std::copy(key, key + model.E, row.begin());
                if (rotary)  // turned by its position (checked against ONNX's semantics in tests/test_rotary.cpp)
                    xattn::rotate_row(*rotary, model.E, static_cast<std::int64_t>(model.appended[b] + t), row.data(), row.data());
                for (std::size_t c = 0; c < model.E; ++c) model.keys[p].push_back(held(row[c]));
                for (std::size_t c = 0; c < model.Ev; ++c) model.values[p].push_back(held(v.data()[(p * n + t) * model.Ev + c]));
            }
            const std::size_t over = model.keys[p].size() / model.E > model.capacity ? model.keys[p].size() / model.E - model.capacity : 0;
            model.keys[p].erase(model.keys[p].begin(), model.keys[p].begin() + over * model.E);  // a rolling cache's oldest
            model.values[p].erase(model.values[p].begin(), model.values[p].begin() + over * model.Ev);
        }
        model.appended[b] += count;
    }
}

void truncate(FuzzedDataProvider& in, xattn::KvCache& cache, Model& model) {
    std::vector<std::size_t> lengths(model.B);
    const bool each = in.ConsumeBool();
    const std::size_t most = *std::max_element(model.appended.begin(), model.appended.end());
    const std::size_t one = in.ConsumeIntegralInRange<std::size_t>(0, most + 1);
    bool valid = true;
    for (std::size_t b = 0; b < model.B; ++b) {
        lengths[b] = each ? in.ConsumeIntegralInRange<std::size_t>(0, model.appended[b] + 1) : one;
        valid = valid && lengths[b] <= model.appended[b] && lengths[b] >= model.appended[b] - model.held(b);
    }
    const xattn::Status st = each ? cache.truncate(lengths.data()) : cache.truncate(one);
    FUZZ_CHECK(st.ok() == valid, "truncate to %zu …: %s", lengths[0], st.message().c_str());
    if (!st.ok()) return;
    for (std::size_t b = 0; b < model.B; ++b) {
        const std::size_t drop = model.appended[b] - lengths[b];
        for (std::size_t h = 0; h < model.Hkv; ++h) {
            const std::size_t p = b * model.Hkv + h;
            model.keys[p].resize(model.keys[p].size() - drop * model.E);
            model.values[p].resize(model.values[p].size() - drop * model.Ev);
        }
        model.appended[b] = lengths[b];
    }
}

// ALiBi's bias grows with the distance from the query: slope · (j − p) reaches 546 at S = 1092 and a slope of
// −0.5, where the keys furthest back take the weight and one float32 rounding of their logit is 3e-5. Any
// float32 computation of such logits (PyTorch's, with the bias as an additive mask, too) carries that rounding
// into the result, past the golden tolerance, which does not grow with the logits. The softmax sees logit
// differences: a rounding δ_j of key j's logit moves output e by w_j·(v_je − o_e)·δ_j and weight j by
// w_j·(δ_j − Σ_k w_k·δ_k). The allowance is that sum for two roundings (the bias, and the logit it is added to)
// of each key's |bias|, with the reference's weights: as golden::within_reference takes it, in units of 2^-24.
// Without ALiBi it is empty, and the golden tolerance stands alone.
struct AlibiAllowance {
    std::vector<double> output, weights;  // like the results: (B, Hq, L, Ev), (B, Hq, L, S)
};

AlibiAllowance alibi_allowance(const xattn::SdpaOptions& so, const xattn::AttentionResult& ref, const xt::xarray<float>& V,
                               std::size_t L, std::size_t S, std::size_t G) {
    AlibiAllowance a;
    if (so.alibi_slopes.empty()) return a;
    const std::size_t B = ref.output.shape()[0], Hq = ref.output.shape()[1], Ev = ref.output.shape()[3];
    a.output.assign(ref.output.size(), 0.0);
    a.weights.assign(ref.weights.size(), 0.0);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < Hq; ++h)
            for (std::size_t i = 0; i < L; ++i) {
                const std::size_t row = (b * Hq + h) * L + i;
                const double p = double(i) + double(so.key_lengths[b]) - double(L);  // bottom-right, per element
                const float* w = ref.weights.data() + row * S;                        // (S)
                const float* o = ref.output.data() + row * Ev;                        // (Ev)
                const float* v = V.data() + (b * (Hq / G) + h / G) * S * Ev;          // (S, Ev)
                double spread = 0.0;  // Σ_k w_k·δ_k
                for (std::size_t j = 0; j < S; ++j) {
                    const double delta = 2.0 * std::fabs(double(so.alibi_slopes[h]) * (double(j) - p));
                    spread += w[j] * delta;
                    for (std::size_t e = 0; e < Ev; ++e)
                        a.output[row * Ev + e] += w[j] * std::fabs(double(v[j * Ev + e]) - o[e]) * delta;
                    a.weights[row * S + j] = w[j] * delta;
                }
                for (std::size_t j = 0; j < S; ++j) a.weights[row * S + j] += w[j] * spread;
            }
    return a;
}

void attend(FuzzedDataProvider& in, std::mt19937& rng, bool extreme, const xattn::KvCache& cache, const Model& model) {
    const std::size_t G = in.ConsumeIntegralInRange<std::size_t>(1, 4), S = model.length();
    std::size_t L = in.ConsumeIntegralInRange<std::size_t>(1, 3);
    if (in.ConsumeIntegralInRange<int>(0, 5) == 0) L = in.ConsumeIntegralInRange<std::size_t>(4, 20);  // prefill
    const bool bad_heads = in.ConsumeIntegralInRange<int>(0, 15) == 0 && model.Hkv > 1;
    const std::size_t Hq = model.Hkv * G + (bad_heads ? 1 : 0);
    xt::xarray<float> q = random_tensor(rng, {model.B, Hq, L, model.E}, extreme);  // (B, Hq, L, E)
    const bool halves = rng() % 3 == 0;  // the query as IEEE halves: every check below on what they widen to
    if (halves) q = widened_halves(q);
    xattn::KvAttendOptions o;
    o.is_causal = in.ConsumeBool();
    xattn::SdpaOptions ruled;  // the rules, as SDPA takes them (key lengths are the cache's own)
    fuzz::rules(in, model.B, Hq, L, S, ruled);
    o.softcap = ruled.softcap, o.window = ruled.window, o.alibi_slopes = ruled.alibi_slopes;
    o.need_weights = in.ConsumeIntegralInRange<int>(0, 3) == 0;
    // A scale of 0 is refused; others up to 1.5/√E, logits of the size attention meets. Far larger ones (a scale
    // of 1.37 at E = 64 gave logits of 46) put the output past the golden tolerance in float32 whatever the order
    // of the sums: a plain float32 loop reached half of it there, this machine's FMA kernels 1.09 of it.
    if (in.ConsumeBool())
        o.scale = in.ConsumeBool() ? 0.0 : in.ConsumeFloatingPointInRange<double>(-1.5, 1.5) / std::sqrt(double(model.E));
    const int mask = in.ConsumeIntegralInRange<int>(0, 5);  // none ×3, boolean, additive, boolean of a wrong width
    if (mask >= 3) {
        // (L, S) or, for key padding, (B, 1, 1, S); every fourth key hidden.
        const std::size_t width = S + (mask == 5 ? 1 : 0);
        const xattn::Shape shape = in.ConsumeBool() ? xattn::Shape{L, width} : xattn::Shape{model.B, 1, 1, width};
        if (mask == 4) {
            xt::xarray<float> m = random_tensor(rng, shape, extreme);  // added to the scores
            for (float& x : m) x = rng() % 4 == 0 ? -std::numeric_limits<float>::infinity() : x;
            o.attn_mask = xattn::Mask::additive(m);
        } else {
            xt::xarray<bool> m = xt::xarray<bool>::from_shape(shape);
            for (auto&& x : m) x = rng() % 4 != 0;
            o.attn_mask = xattn::Mask::boolean(m);
        }
    }

    // SDPA on what the cache holds, as attend is defined: the judge of what is refused and of NaN and inf.
    xattn::SdpaOptions so;
    so.is_causal = o.is_causal;
    so.causal_alignment = xattn::CausalAlignment::bottom_right;
    so.scale = o.scale;
    so.enable_gqa = true;
    so.need_weights = o.need_weights;
    so.attn_mask = o.attn_mask;
    so.softcap = o.softcap, so.window = o.window, so.alibi_slopes = o.alibi_slopes;
    so.key_lengths = model.lengths();
    const xt::xarray<float> K = model.tensor(model.keys, model.E), V = model.tensor(model.values, model.Ev);
    bool sdpa_ok = true;
    xattn::AttentionResult want;
    try {
        want = xattn::scaled_dot_product_attention(q, K, V, so);
    } catch (const std::invalid_argument&) {
        sdpa_ok = false;
    }

    xattn::AttentionResult got[3];
    for (unsigned t = 1; t <= 3; ++t) {
        xattn::set_num_threads(t);
        try {
            got[t - 1] = cache.attend(q, o);
        } catch (const std::invalid_argument& e) {
            FUZZ_CHECK(!sdpa_ok, "attend refused what SDPA on the held K and V takes: %s", e.what());
            FUZZ_CHECK(std::strstr(e.what(), "kv_cache: attend: ") == e.what(), "message: %s", e.what());
            FUZZ_CHECK(cache.length() == S, "a refused attend changed the length");
            xattn::set_num_threads(1);
            return;
        }
        FUZZ_CHECK(sdpa_ok, "attend took what SDPA on the held K and V refuses (Hq %zu, L %zu, S %zu)", Hq, L, S);
        if (t > 1) {
            FUZZ_CHECK(same_bits(got[t - 1].output, got[0].output), "output at %u threads differs from 1 thread (S %zu)", t, S);
            FUZZ_CHECK(same_bits(got[t - 1].weights, got[0].weights), "weights at %u threads differ from 1 thread", t);
        }
    }
    xattn::set_num_threads(1);
    const xattn::AttentionResult& r = got[0];
    FUZZ_CHECK(r.output.shape() == want.output.shape(), "output shape");
    if (o.need_weights) FUZZ_CHECK(r.weights.shape() == want.weights.shape(), "weights shape");

    // Moderate values: within the golden tolerance of SDPA on the held K and V and, where the problem is small
    // enough for it to be quick, of the float64 reference (long caches are checked against SDPA alone).
    const bool small = model.B * Hq * L * S <= 20000;
    xattn::AttentionResult ref;
    AlibiAllowance alibi;
    if (!extreme && small) {
        ref = xattn::reference_sdpa(q, K, V, so);
        alibi = alibi_allowance(so, ref, V, L, S, G);
    }
    const auto compare = [&](const xt::xarray<float>& g, const xt::xarray<float>& sdpa, const xt::xarray<float>& f64,
                             const std::vector<double>& allowance, const char* what) {
        for (std::size_t i = 0; i < g.size(); ++i) {
            const float x = g.data()[i], y = sdpa.data()[i];
            FUZZ_CHECK(std::isnan(x) == std::isnan(y) && (std::isinf(x) ? x == y : !std::isinf(y)),
                       "%s %zu: %g, SDPA on the held K and V %g (S %zu, L %zu, G %zu)", what, i, x, y, S, L, G);
            if (extreme) continue;
            FUZZ_CHECK(fuzz::within(x, y), "%s %zu: %g, SDPA %g (S %zu, L %zu, G %zu)", what, i, x, y, S, L, G);
            if (small)
                FUZZ_CHECK(golden::within_reference(x, f64.data()[i], allowance.empty() ? 0.0 : allowance[i],
                                                    golden::kAtol, golden::kRtol),
                           "%s %zu: %g, reference %g (S %zu, L %zu, G %zu)", what, i, x, double(f64.data()[i]), S, L, G);
        }
    };
    compare(r.output, want.output, ref.output, alibi.output, "output");
    if (o.need_weights) compare(r.weights, want.weights, ref.weights, alibi.weights, "weight");

    // Halves in and out: the uint16 run_attend on the query's halves gives the float32 attend's results, rounded
    // once; the plan takes whatever the float32 attend took.
    if (!halves) return;
    xattn::KvAttendSettings hs = o;
    hs.float16_io = true;
    const xattn::MaskRef mask_ref = o.attn_mask.ref();
    xattn::KvAttendPlan plan;
    const xattn::Status st = cache.plan_attend(xattn::Shape(q.shape().begin(), q.shape().end()), mask_ref.kind,
                                               mask_ref.shape, hs, &plan);
    FUZZ_CHECK(st.ok(), "a float16 attend refused what the float32 one took: %s", st.message().c_str());
    const std::vector<std::uint16_t> hq = bits_of_halves(q);
    std::vector<std::uint16_t> hout(xattn::numel(plan.output_shape)), hw(o.need_weights ? xattn::numel(plan.weights_shape) : 0);
    std::vector<unsigned char> ws(plan.workspace_bytes);  // exactly the plan's bytes: ASan checks every access
    xattn::set_num_threads(static_cast<unsigned>(1 + rng() % 3));
    cache.run_attend(plan, hq.data(), mask_ref, hout.data(), o.need_weights ? hw.data() : nullptr, ws.data());
    xattn::set_num_threads(1);
    const std::size_t bad_out = first_unrounded(hout, r.output);
    FUZZ_CHECK(bad_out == SIZE_MAX, "float16 output %zu: 0x%04x, the float32 attend's %g (S %zu, L %zu, G %zu)", bad_out,
               bad_out < hout.size() ? hout[bad_out] : 0, bad_out < r.output.size() ? double(r.output.data()[bad_out]) : 0.0, S, L, G);
    if (o.need_weights) {
        const std::size_t bad_w = first_unrounded(hw, r.weights);
        FUZZ_CHECK(bad_w == SIZE_MAX, "float16 weight %zu: 0x%04x, the float32 attend's %g", bad_w,
                   bad_w < hw.size() ? hw[bad_w] : 0, bad_w < r.weights.size() ? double(r.weights.data()[bad_w]) : 0.0);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    xattn::kernels::set_min_work_per_worker(0.0);
    xattn::KvCacheConfig c;
    c.batch = in.ConsumeIntegralInRange<std::size_t>(1, 2);
    c.kv_heads = in.ConsumeIntegralInRange<std::size_t>(1, 3);
    const bool long_cache = in.ConsumeIntegralInRange<int>(0, 7) == 0;
    const std::size_t dims[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64};
    c.head_dim = dims[in.ConsumeIntegralInRange<std::size_t>(0, long_cache ? 7 : 10)];
    c.value_dim = in.ConsumeBool() ? 0 : dims[in.ConsumeIntegralInRange<std::size_t>(0, long_cache ? 7 : 10)];
    c.capacity = long_cache ? in.ConsumeIntegralInRange<std::size_t>(1000, 2600) : in.ConsumeIntegralInRange<std::size_t>(1, 40);
    c.dtype = in.ConsumeBool() ? xattn::CacheDtype::float16 : xattn::CacheDtype::float32;
    c.rolling = in.ConsumeIntegralInRange<int>(0, 2) == 0;
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0 && c.head_dim % 2 == 0) {
        xattn::RotaryEmbedding r;
        r.interleaved = in.ConsumeBool();
        r.rotary_dim = in.ConsumeBool() ? 0 : c.head_dim / 2 / 2 * 2;
        c.rotary = r;
    }
    const bool extreme = in.ConsumeBool();
    std::mt19937 rng(in.ConsumeIntegral<std::uint32_t>());

    xattn::KvCache cache(c);
    const std::size_t problems = c.batch * c.kv_heads;
    Model model{c.batch, c.kv_heads, c.head_dim, cache.value_dim(), c.capacity, c.rolling,
                std::vector<std::vector<float>>(problems), std::vector<std::vector<float>>(problems),
                std::vector<std::size_t>(c.batch, 0)};
    for (int step = 0; step < 12 && in.remaining_bytes() > 0; ++step) {
        switch (in.ConsumeIntegralInRange<int>(0, 4)) {
            case 0: case 1: append(in, rng, extreme, cache, model); break;
            case 2: truncate(in, cache, model); break;
            default: attend(in, rng, extreme, cache, model); break;
        }
        check_holds(cache, model);
    }
    return 0;
}
