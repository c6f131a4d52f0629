// Fuzzes rotary embeddings (xattn/rotary.hpp): shapes, rotary_dim, base, positions or an offset of any value.
//   plan_rotary:   refuses exactly what the rules below refuse (small shapes), always with the function's name;
//                  never takes what they refuse
//   float32 runs:  forward and backward, in place or not (the same bits), within a few float32 roundings of the
//                  float64 reference below wherever a pair holds moderate values
//   uint16 runs:   the float32 run on the widened halves, each turned feature rounded once to nearest even (a NaN
//                  the quiet NaN 0x7e00 of either sign); the features past rotary_dim passed through bit for bit;
//                  in place or not (the same bits)
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "fuzz_common.hpp"
#include "kernels/half.hpp"

namespace {

using xattn::Shape;
using xattn::kernels::float_to_half;
using xattn::kernels::half_to_float;

constexpr std::int64_t kPositionLimit = std::int64_t{1} << 31;

// A dim: mostly small, sometimes zero or absurd.
std::size_t dim(FuzzedDataProvider& in) {
    return in.ConsumeIntegralInRange<int>(0, 7) == 0 ? fuzz::dim(in) : in.ConsumeIntegralInRange<std::size_t>(1, 5);
}

// A position: mostly in [0, 5000], sometimes at or past the ends of [0, 2^31).
std::int64_t position(FuzzedDataProvider& in) {
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
        case 0: return -1;
        case 1: return kPositionLimit - 1;
        case 2: return kPositionLimit;
        case 3: return in.ConsumeIntegral<std::int64_t>();
        default: return in.ConsumeIntegralInRange<std::int64_t>(0, 5000);
    }
}

// The dims of x (…, L, D) as the rules read them: B (the dims before -3), H (dim -3), L, D.
struct Dims {
    std::size_t B = 1, H = 1, L = 0, D = 0;
};

// Whether plan_rotary must take x with these settings (xattn/rotary.hpp, written again): x has 2 dims or more and
// fits in a tensor; rotary_dim (0: D) is even and at most D; base is finite and > 0; positions are L or B·L values
// in [0, 2^31), or, without them, position_offset + L stays within 2^31.
bool valid(const Shape& x, const Dims& d, const xattn::RotarySettings& s) {
    if (x.size() < 2) return false;
    std::uint64_t n = 0;
    if (!xattn::element_count(x, &n) || n > xattn::kMaxTensorBytes / 4) return false;
    const std::size_t r = s.rotary_dim ? s.rotary_dim : d.D;
    if (r % 2 != 0 || r > d.D) return false;
    if (!(s.base > 0.0) || !std::isfinite(s.base)) return false;
    if (s.positions.empty())
        return s.position_offset >= 0 && d.L <= static_cast<std::uint64_t>(kPositionLimit) &&
               s.position_offset <= kPositionLimit - static_cast<std::int64_t>(d.L);
    if (s.positions.size() != d.L && s.positions.size() != d.B * d.L) return false;
    for (std::int64_t p : s.positions)
        if (p < 0 || p >= kPositionLimit) return false;
    return true;
}

// ONNX RotaryEmbedding (opset 23) in float64, feature by feature: feature f < r of the row at position p belongs to
// pair k = f mod r/2 (rotate_half: partner f ± r/2) or k = f / 2 (interleaved: partner f ± 1); its pair turns by
// p · base^(−2k / r), the first of the pair becoming x·cos − y·sin and the second y·cos + x·sin (the angle
// negated for the backward). Features from r on pass through.
std::vector<double> reference(const std::vector<float>& x, const Dims& d, const xattn::RotarySettings& s, bool backward) {
    const std::size_t r = s.rotary_dim ? s.rotary_dim : d.D, half = r / 2;
    std::vector<double> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t f = i % d.D, row = i / d.D, l = row % d.L, n = row / (d.L * d.H);
        if (f >= r) {
            out[i] = x[i];
            continue;
        }
        const std::int64_t p = s.positions.empty()           ? s.position_offset + static_cast<std::int64_t>(l)
                               : s.positions.size() == d.L ? s.positions[l]
                                                           : s.positions[n * d.L + l];
        const bool first = s.interleaved ? f % 2 == 0 : f < half;
        const std::size_t k = s.interleaved ? f / 2 : f % half;
        const std::size_t partner = s.interleaved ? (first ? f + 1 : f - 1) : (first ? f + half : f - half);
        const double angle = static_cast<double>(p) * std::pow(s.base, -2.0 * static_cast<double>(k) / static_cast<double>(r));
        const double c = std::cos(angle), sn = backward ? -std::sin(angle) : std::sin(angle);
        const double self = x[i], other = x[i - f + partner];
        out[i] = first ? self * c - other * sn : self * c + other * sn;
    }
    return out;
}

bool same_bits(const void* a, const void* b, std::size_t bytes) { return bytes == 0 || std::memcmp(a, b, bytes) == 0; }

void check_run(const xattn::RotaryPlan& plan, const Dims& d, const xattn::RotarySettings& s, std::mt19937& rng,
               bool extreme, bool backward) {
    const std::size_t n = xattn::numel(plan.shape), r = plan.rotary_dim;
    const auto run = [&](const auto* x, auto* out) {
        if (backward) xattn::run_rotary_backward(plan, x, out);
        else xattn::run_rotary(plan, x, out);
    };
    // float32: against the reference, and in place.
    std::vector<float> x(n), out(n);
    for (float& v : x) v = fuzz::draw(rng, extreme);
    run(x.data(), out.data());
    std::vector<float> inplace = x;
    run(inplace.data(), inplace.data());
    FUZZ_CHECK(same_bits(inplace.data(), out.data(), n * 4), "float32 in place differs (backward %d)", int(backward));
    const std::vector<double> want = reference(x, d, s, backward);
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t f = i % d.D;
        if (f >= r) {
            FUZZ_CHECK(same_bits(&out[i], &x[i], 4), "feature %zu past rotary_dim %zu changed", f, r);
            continue;
        }
        const std::size_t half = r / 2;
        const std::size_t partner = s.interleaved ? (f % 2 == 0 ? f + 1 : f - 1) : (f < half ? f + half : f - half);
        const float a = x[i], b = x[i - f + partner];
        if (!fuzz::tame(a) || !fuzz::tame(b)) continue;
        // cos and sin rounded to float32, two products and a sum: at most about 3 roundings of |a| + |b|.
        const double bound = 4.0 * 0x1p-24 * (std::fabs(a) + std::fabs(b)) + 1e-37;
        FUZZ_CHECK(std::fabs(out[i] - want[i]) <= bound, "%s element %zu (feature %zu of %zu, r %zu): %.9g, reference %.9g",
                   backward ? "backward" : "forward", i, f, d.D, r, double(out[i]), want[i]);
    }

    // Halves: any bits (NaN, inf, subnormal among them) one time in four, else moderate values rounded.
    std::vector<std::uint16_t> h(n), hout(n);
    for (std::uint16_t& v : h) v = rng() % 4 == 0 ? static_cast<std::uint16_t>(rng()) : float_to_half(fuzz::draw(rng, extreme));
    std::vector<float> widened(n), wout(n);
    for (std::size_t i = 0; i < n; ++i) widened[i] = half_to_float(h[i]);
    run(h.data(), hout.data());
    run(widened.data(), wout.data());
    for (std::size_t i = 0; i < n; ++i) {
        if (i % d.D >= r) {
            FUZZ_CHECK(hout[i] == h[i], "half %zu past rotary_dim: 0x%04x, given 0x%04x", i, hout[i], h[i]);
        } else if (std::isnan(wout[i])) {
            FUZZ_CHECK((hout[i] & 0x7fffu) == 0x7e00u, "half %zu: 0x%04x where float32 gives NaN", i, hout[i]);
        } else {
            FUZZ_CHECK(hout[i] == float_to_half(wout[i]), "half %zu: 0x%04x, the float32 run %.9g rounds to 0x%04x", i,
                       hout[i], double(wout[i]), float_to_half(wout[i]));
        }
    }
    std::vector<std::uint16_t> hinplace = h;
    run(hinplace.data(), hinplace.data());
    FUZZ_CHECK(same_bits(hinplace.data(), hout.data(), n * 2), "halves in place differ (backward %d)", int(backward));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const std::size_t rank = in.ConsumeIntegralInRange<std::size_t>(0, 5);
    Shape x(rank);
    for (std::size_t i = 0; i + 1 < rank; ++i) x[i] = dim(in);
    if (rank >= 1) {  // D: mostly even (0 to 18), one in four of those made odd; sometimes any dim
        if (in.ConsumeIntegralInRange<int>(0, 7) == 0) {
            x[rank - 1] = fuzz::dim(in);
        } else {
            x[rank - 1] = 2 * in.ConsumeIntegralInRange<std::size_t>(0, 9);
            if (in.ConsumeIntegralInRange<int>(0, 3) == 0) x[rank - 1] += 1;
        }
    }
    Dims d;
    if (rank >= 2) {
        d.L = x[rank - 2], d.D = x[rank - 1];
        d.H = rank >= 3 ? x[rank - 3] : 1;
        for (std::size_t i = 0; i + 3 < rank; ++i) d.B *= x[i];  // (small shapes only are predicted and run)
    }
    xattn::RotarySettings s;
    s.interleaved = in.ConsumeBool();
    s.rotary_dim = in.ConsumeBool() ? 0 : in.ConsumeIntegralInRange<std::size_t>(0, rank >= 1 && x[rank - 1] < 16 ? x[rank - 1] + 2 : 16);
    s.base = in.ConsumeBool() ? fuzz::any_double(in) : in.ConsumeFloatingPointInRange<double>(1.01, 1e6);
    switch (in.ConsumeIntegralInRange<int>(0, 4)) {
        case 0: s.position_offset = position(in); break;
        case 1:  // at the last offset that fits, or one past it
            s.position_offset = kPositionLimit - static_cast<std::int64_t>(std::min<std::size_t>(d.L, kPositionLimit)) +
                                in.ConsumeIntegralInRange<int>(-1, 1);
            break;
        case 2: s.positions.resize(d.L <= 64 ? d.L : 0); break;
        case 3: s.positions.resize(d.B * d.L <= 256 ? d.B * d.L : 0); break;
        default: s.positions.resize(in.ConsumeIntegralInRange<std::size_t>(1, 12)); break;
    }
    for (std::int64_t& p : s.positions) p = position(in);
    const bool extreme = in.ConsumeBool();
    std::mt19937 rng(in.ConsumeIntegral<std::uint32_t>());

    xattn::RotaryPlan plan;
    const xattn::Status st = xattn::plan_rotary(x, s, &plan);
    bool small = rank >= 2;
    for (std::size_t v : x) small = small && v <= 64;
    std::uint64_t n = 0;
    small = small && xattn::element_count(x, &n) && n <= 4096;
    if (!st.ok()) {
        FUZZ_CHECK(st.message().rfind("apply_rotary_embedding: ", 0) == 0, "message without the function: %s", st.message().c_str());
        FUZZ_CHECK(!small || !valid(x, d, s), "a valid call refused: %s", st.message().c_str());
        return 0;
    }
    FUZZ_CHECK(valid(x, d, s) || !small, "an invalid call taken (rank %zu, rotary_dim %zu, base %g)", rank, s.rotary_dim, s.base);
    FUZZ_CHECK(plan.shape == x && plan.L == d.L && plan.D == d.D, "the plan's dims");
    FUZZ_CHECK(plan.rotary_dim == (s.rotary_dim ? s.rotary_dim : d.D), "rotary_dim %zu", plan.rotary_dim);
    if (!small) return 0;
    check_run(plan, d, s, rng, extreme, false);
    check_run(plan, d, s, rng, extreme, true);
    return 0;
}
