// Fuzzes the backward pass against the float64 reference on random problems large enough to cross its query
// groups (16 rows) and key tiles (up to 96 keys), and sometimes long enough (S > 512, few problems) to cut its keys
// into chunks across threads: a random kernel set, shapes, GQA, masks of every broadcast,
// both causal alignments (with or without a mask), scale, dropout and the rules (soft-cap, window, ALiBi, key
// lengths), with moderate values or with NaN, ±inf, huge and subnormal ones.
//   every problem:     output, dQ, dK and dV are the same bits at 1, 2 and 3 threads (helpers woken for any
//                      work, so that even tiny problems are split)
//   tame groups:       where a key/value head and the query heads that share it (and the mask) hold only
//                      values in [-2, 2] (and a mask's -inf), all four agree with the reference, however wild
//                      the other groups of the same call are: within the gradient tolerance plus one float32
//                      rounding of the magnitudes each result sums (Bounds below)
#include <vector>

#include "fuzz_common.hpp"
#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"

namespace {

using fuzz::all_tame;
using fuzz::random_tensor;
using fuzz::same_bits;
using fuzz::tame;

// How large the terms are that each result sums, for a rounding allowance beside the golden tolerance. The
// backward forms dS = P ⊙ (dP − D) with dP = dO·V_j, a float32 sum of Ev products, and D = dO·O. Where one key
// takes all the weight (S = 1, or one key far above the rest), dP − D cancels to nothing and what is left is dP's
// rounding, summed over every query row into dK: 2.4e-5 from an exact 0 at L = 42, G = 3, Ev = 64, past the
// golden tolerance, which does not grow with the rows summed. Every FlashAttention-style backward (PyTorch's CPU
// flash kernel among them) forms D this way. The allowance is one float32 unit roundoff (2^-24) of the sum of
// the magnitudes of those terms; the worst in ten minutes of fuzzing used 2% of it. A fault (a lost term, a
// wrong row, a misplaced dropout multiplier) is off by a sizeable part of these sums, not by 2^-24 of them.
struct Bounds {
    std::vector<double> output, dq, dk, dv;  // like the results: (B, Hq, L, Ev), (B, Hq, L, E), (B, Hkv, S, E), (B, Hkv, S, Ev)
};

// P: the weights without dropout (B, Hq, L, S); O: the output (B, Hq, L, Ev); keep: the largest dropout multiplier.
Bounds bounds(const xt::xarray<float>& q, const xt::xarray<float>& k, const xt::xarray<float>& v,
              const xt::xarray<float>& dO, const xt::xarray<float>& P, const xt::xarray<float>& O, double scale,
              double keep, std::size_t G) {
    const std::size_t B = q.shape(0), Hq = q.shape(1), L = q.shape(2), E = q.shape(3), S = k.shape(2), Ev = v.shape(3);
    const std::size_t Hkv = Hq / G;
    Bounds m{std::vector<double>(O.size()), std::vector<double>(q.size()), std::vector<double>(k.size()),
             std::vector<double>(v.size())};
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < Hq; ++h) {
            const std::size_t qh = b * Hq + h, kv = b * Hkv + h / G;
            for (std::size_t i = 0; i < L; ++i) {
                const float* dOi = dO.data() + (qh * L + i) * Ev;  // (Ev)
                double d = 0.0;                                     // Σ |dO_c O_c|
                for (std::size_t c = 0; c < Ev; ++c) d += std::fabs(double(dOi[c]) * O.data()[(qh * L + i) * Ev + c]);
                for (std::size_t j = 0; j < S; ++j) {
                    const double p = P.data()[(qh * L + i) * S + j];
                    if (p == 0.0) continue;
                    const float* vj = v.data() + (kv * S + j) * Ev;  // (Ev)
                    double a = 0.0;                                   // Σ |dO_c V_jc|
                    for (std::size_t c = 0; c < Ev; ++c) {
                        a += std::fabs(double(dOi[c]) * vj[c]);
                        m.output[(qh * L + i) * Ev + c] += p * keep * std::fabs(vj[c]);
                        m.dv[(kv * S + j) * Ev + c] += p * keep * std::fabs(dOi[c]);
                    }
                    const double t = std::fabs(scale) * p * (keep * a + d);  // |scale · P_ij| (|dP_ij| + |D_i|)
                    for (std::size_t e = 0; e < E; ++e) {
                        m.dq[(qh * L + i) * E + e] += t * std::fabs(k.data()[(kv * S + j) * E + e]);
                        m.dk[(kv * S + j) * E + e] += t * std::fabs(q.data()[(qh * L + i) * E + e]);
                    }
                }
            }
        }
    return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const auto sets = xattn::kernels::available_kernels();
    const xattn::kernels::KernelSet* set = sets[in.ConsumeIntegralInRange<std::size_t>(0, sets.size() - 1)];
    const std::size_t B = in.ConsumeIntegralInRange<std::size_t>(1, 2), Hkv = in.ConsumeIntegralInRange<std::size_t>(1, 2);
    const std::size_t G = in.ConsumeIntegralInRange<std::size_t>(1, 3), Hq = Hkv * G;
    const std::size_t dims[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64};
    const std::size_t E = dims[in.ConsumeIntegralInRange<std::size_t>(0, 13)];
    const std::size_t Ev = dims[in.ConsumeIntegralInRange<std::size_t>(0, 13)];
    // Mostly within one tile; one in four crosses query groups and key tiles, and one in eight of those has keys
    // enough to be cut into chunks. Kept to about 150k products so that the reference stays quick: L gives way
    // first, as decoding's few query rows do against many keys.
    const int reach = in.ConsumeIntegralInRange<int>(0, 31);
    std::size_t L = in.ConsumeIntegralInRange<std::size_t>(1, reach >= 24 ? 70 : 17);
    std::size_t S = reach == 31 ? in.ConsumeIntegralInRange<std::size_t>(513, 1300)
                                : in.ConsumeIntegralInRange<std::size_t>(1, reach >= 24 ? 300 : 33);
    while (B * Hq * L * S * (E + Ev) > 150000) {
        if (L > 1) L /= 2;
        else S = S / 2 + 1;
    }
    const bool extreme = in.ConsumeBool();

    xattn::SdpaOptions o;
    o.enable_gqa = G > 1;
    const int mode = in.ConsumeIntegralInRange<int>(0, 3);  // none, causal, boolean mask, additive mask
    o.is_causal = mode == 1 || (mode >= 2 && in.ConsumeBool());
    o.causal_alignment = in.ConsumeBool() ? xattn::CausalAlignment::bottom_right : xattn::CausalAlignment::top_left;
    fuzz::rules(in, B, Hq, L, S, o);
    // Scales up to 1.5/√E, as in fuzz_kv_cache: far larger logits leave float32 outside the tolerance whatever the
    // order of the sums. 0 and other refusals are fuzz_plan's.
    if (in.ConsumeBool()) {
        const double s = in.ConsumeFloatingPointInRange<double>(0.05, 1.5) / std::sqrt(double(E));
        o.scale = in.ConsumeBool() ? s : -s;
    }
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) o.dropout_p = in.ConsumeProbability<double>() * 0.8, o.seed = in.ConsumeIntegral<std::uint32_t>();
    std::mt19937 rng(in.ConsumeIntegral<std::uint32_t>());

    const xt::xarray<float> q = random_tensor(rng, {B, Hq, L, E}, extreme);    // (B, Hq, L, E)
    const xt::xarray<float> k = random_tensor(rng, {B, Hkv, S, E}, extreme);   // (B, Hkv, S, E)
    const xt::xarray<float> v = random_tensor(rng, {B, Hkv, S, Ev}, extreme);  // (B, Hkv, S, Ev)
    const xt::xarray<float> dO = random_tensor(rng, {B, Hq, L, Ev}, extreme);  // (B, Hq, L, Ev)
    // Masks broadcast from (L, S), (B, 1, 1, S) for key padding, or (B, Hq, L, S); one key in four hidden.
    bool mask_tame = true;
    if (mode >= 2) {
        const int kind = in.ConsumeIntegralInRange<int>(0, 2);
        const xattn::Shape shape = kind == 0 ? xattn::Shape{L, S} : kind == 1 ? xattn::Shape{B, 1, 1, S} : xattn::Shape{B, Hq, L, S};
        if (mode == 3) {
            xt::xarray<float> m = random_tensor(rng, shape, extreme);  // added to the scores
            for (float& x : m) x = rng() % 4 == 0 ? -std::numeric_limits<float>::infinity() : x;
            for (float x : m) mask_tame = mask_tame && (tame(x) || x == -std::numeric_limits<float>::infinity());
            o.attn_mask = xattn::Mask::additive(m);
        } else {
            xt::xarray<bool> m = xt::xarray<bool>::from_shape(shape);
            for (auto&& x : m) x = rng() % 4 != 0;
            o.attn_mask = xattn::Mask::boolean(m);
        }
    }

    xattn::kernels::use_kernels(set);
    xattn::kernels::set_min_work_per_worker(0.0);
    xattn::GradientResult got[3];
    for (unsigned t = 1; t <= 3; ++t) {
        xattn::set_num_threads(t);
        got[t - 1] = xattn::scaled_dot_product_attention_backward(q, k, v, dO, o);
        if (t == 1) continue;
        const xattn::GradientResult &a = got[t - 1], &b = got[0];
        FUZZ_CHECK(same_bits(a.output, b.output) && same_bits(a.grad_query, b.grad_query) &&
                       same_bits(a.grad_key, b.grad_key) && same_bits(a.grad_value, b.grad_value),
                   "%s at %u threads differs from 1 thread (B %zu, Hq %zu, Hkv %zu, L %zu, S %zu, E %zu, Ev %zu)",
                   set->name, t, B, Hq, Hkv, L, S, E, Ev);
    }
    xattn::set_num_threads(1);
    xattn::kernels::use_kernels(nullptr);

    const xattn::GradientResult want = xattn::reference_sdpa_backward(q, k, v, dO, o);
    const xattn::GradientResult& r = got[0];
    xattn::SdpaOptions no_dropout = o;
    no_dropout.dropout_p = 0.0;
    const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(double(E));
    const Bounds m = bounds(q, k, v, dO, xattn::reference_sdpa(q, k, v, no_dropout).weights, want.output, scale,
                            1.0 / (1.0 - o.dropout_p), G);
    // The golden gradient tolerance, plus one float32 unit roundoff of the magnitudes summed.
    const auto compare = [&](const xt::xarray<float>& g, const xt::xarray<float>& w, const std::vector<double>& terms,
                             std::size_t first, std::size_t n, const char* what) {
        for (std::size_t i = first; i < first + n; ++i) {
            const double x = g.data()[i], y = w.data()[i];
            FUZZ_CHECK(golden::within_reference(x, y, terms[i], golden::kGradAtol, golden::kGradRtol),
                       "%s %s %zu: %g, reference %g, terms %g (B %zu, Hq %zu, Hkv %zu, L %zu, S %zu, E %zu, Ev %zu, "
                       "mode %d, dropout %g)",
                       set->name, what, i, x, y, terms[i], B, Hq, Hkv, L, S, E, Ev, mode, o.dropout_p);
        }
    };
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < Hkv; ++h) {
            // The group: key/value head h and query heads h·G … h·G + G − 1 of batch element b.
            const std::size_t kv = b * Hkv + h, q0 = b * Hq + h * G;
            const bool group_tame = mask_tame && all_tame(k.data() + kv * S * E, S * E) &&
                                    all_tame(v.data() + kv * S * Ev, S * Ev) && all_tame(q.data() + q0 * L * E, G * L * E) &&
                                    all_tame(dO.data() + q0 * L * Ev, G * L * Ev);
            if (!group_tame) continue;
            compare(r.output, want.output, m.output, q0 * L * Ev, G * L * Ev, "output");
            compare(r.grad_query, want.grad_query, m.dq, q0 * L * E, G * L * E, "dQ");
            compare(r.grad_key, want.grad_key, m.dk, kv * S * E, S * E, "dK");
            compare(r.grad_value, want.grad_value, m.dv, kv * S * Ev, S * Ev, "dV");
        }
    return 0;
}
