// Rotary position embeddings (xattn/rotary.hpp): validation, the rotation of rows, and the xtensor API.
#include "xattn/rotary.hpp"

#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "kernels/half.hpp"

namespace xattn {
namespace {

constexpr Function kFn = Function::rotary;
constexpr std::int64_t kPositionLimit = std::int64_t{1} << 31;

double num(std::size_t n) { return static_cast<double>(n); }

// One row of D features (float32 or halves) turned by `position`'s angles, or back.
template <class T>
void turn(const RotaryEmbedding& rule, std::size_t D, std::int64_t position, const T* in, T* out, bool inverse) {
    const auto load = [](T x) {
        if constexpr (std::is_same_v<T, float>) return x;
        else return kernels::half_to_float(x);
    };
    const auto put = [](float x) {
        if constexpr (std::is_same_v<T, float>) return x;
        else return kernels::float_to_half(x);
    };
    const std::size_t r = rule.rotary_dim ? rule.rotary_dim : D, half = r / 2;
    for (std::size_t k = 0; k < half; ++k) {
        // Pair k turns by position · base^(−2k / r), taken in float64.
        const double angle = static_cast<double>(position) * std::pow(rule.base, -2.0 * static_cast<double>(k) / static_cast<double>(r));
        const float c = static_cast<float>(std::cos(angle));
        const float s = static_cast<float>(inverse ? -std::sin(angle) : std::sin(angle));
        const std::size_t a = rule.interleaved ? 2 * k : k, b = rule.interleaved ? 2 * k + 1 : k + half;
        const float x = load(in[a]), y = load(in[b]);
        out[a] = put(x * c - y * s);
        out[b] = put(y * c + x * s);
    }
    if (out != in)
        for (std::size_t d = r; d < D; ++d) out[d] = in[d];
}

// Every row of x turned by its position's angles, or turned back.
template <class T>
void rotate_all(const RotaryPlan& plan, const T* in, T* out, bool inverse) {
    const std::size_t L = plan.L, D = plan.D, H = plan.heads;
    for (std::size_t n = 0; n < plan.elements; ++n)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t l = 0; l < L; ++l) {
                const std::size_t row = ((n * H + h) * L + l) * D;  // row l of head h of element n: (D)
                turn(plan.rule, D, plan.position(n, l), in + row, out + row, inverse);
            }
}

}  // namespace

std::int64_t RotaryPlan::position(std::size_t n, std::size_t l) const {
    if (positions.empty()) return position_offset + static_cast<std::int64_t>(l);
    return positions.size() == L ? positions[l] : positions[n * L + l];
}

void rotate_row(const RotaryEmbedding& rule, std::size_t D, std::int64_t position, const float* in, float* out,
                bool inverse) {
    turn(rule, D, position, in, out, inverse);
}

Status plan_rotary(const Shape& x, const RotarySettings& s, RotaryPlan* plan) {
    if (x.size() < 2) return Status::fail(kFn, Message::rotary_rank, {Argument::x}, {}, {x});
    const std::size_t rank = x.size(), L = x[rank - 2], D = x[rank - 1];
    const std::size_t r = s.rotary_dim ? s.rotary_dim : D;
    if (r % 2 != 0 || r > D)
        return Status::fail(kFn, Message::rotary_dim_range, {Argument::rotary_dim, Argument::x}, {num(D), num(s.rotary_dim)}, {x});
    if (!(s.base > 0.0) || !std::isfinite(s.base))
        return Status::fail(kFn, Message::base_range, {Argument::rotary_base}, {s.base});
    if (Status st = check_tensor_size(kFn, Argument::x, x); !st.ok()) return st;
    RotaryPlan p;
    p.shape = x;
    p.L = L, p.D = D, p.rotary_dim = r;
    p.heads = rank >= 3 ? x[rank - 3] : 1;
    for (std::size_t d = 0; d + 3 < rank; ++d) p.elements *= x[d];
    if (!s.positions.empty() && s.positions.size() != L && s.positions.size() != p.elements * L)
        return Status::fail(kFn, Message::positions_count, {Argument::positions},
                            {num(s.positions.size()), num(L), num(p.elements * L)}, {x});
    for (std::size_t i = 0; i < s.positions.size(); ++i)
        if (s.positions[i] < 0 || s.positions[i] >= kPositionLimit)
            return Status::fail(kFn, Message::position_range, {Argument::positions},
                                {num(i), static_cast<double>(s.positions[i])});
    // L past 2^31 (rows of no features) leaves no room for any offset, and must not wrap the subtraction.
    if (s.positions.empty() && (s.position_offset < 0 || L > static_cast<std::uint64_t>(kPositionLimit) ||
                                s.position_offset > kPositionLimit - static_cast<std::int64_t>(L)))
        return Status::fail(kFn, Message::position_offset_range, {Argument::position_offset},
                            {static_cast<double>(s.position_offset)});
    p.rule = s;
    p.rule.rotary_dim = r;
    p.position_offset = s.position_offset;
    p.positions = s.positions;
    *plan = std::move(p);
    return {};
}

void run_rotary(const RotaryPlan& plan, const float* x, float* out) { rotate_all(plan, x, out, false); }

void run_rotary_backward(const RotaryPlan& plan, const float* grad_output, float* grad_x) {
    rotate_all(plan, grad_output, grad_x, true);
}

void run_rotary(const RotaryPlan& plan, const std::uint16_t* x, std::uint16_t* out) { rotate_all(plan, x, out, false); }

void run_rotary_backward(const RotaryPlan& plan, const std::uint16_t* grad_output, std::uint16_t* grad_x) {
    rotate_all(plan, grad_output, grad_x, true);
}

xt::xarray<float> apply_rotary_embedding(const xt::xarray<float>& x, const RotarySettings& settings) {
    RotaryPlan plan;
    if (Status st = plan_rotary(Shape(x.shape().begin(), x.shape().end()), settings, &plan); !st.ok())
        throw std::invalid_argument(st.message());
    xt::xarray<float> out = xt::xarray<float>::from_shape(plan.shape);
    run_rotary(plan, x.data(), out.data());
    return out;
}

xt::xarray<float> apply_rotary_embedding_backward(const xt::xarray<float>& grad_output, const RotarySettings& settings) {
    RotaryPlan plan;
    if (Status st = plan_rotary(Shape(grad_output.shape().begin(), grad_output.shape().end()), settings, &plan); !st.ok())
        throw std::invalid_argument(st.message());
    xt::xarray<float> grad_x = xt::xarray<float>::from_shape(plan.shape);
    run_rotary_backward(plan, grad_output.data(), grad_x.data());
    return grad_x;
}

}  // namespace xattn
