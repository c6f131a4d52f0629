// float16 input and output for run_sdpa, run_sdpa_backward and the KV cache (half_io.hpp): the copies' layout, the
// conversions, and the uint16 entry points, each the float32 call between a widening and a rounding.
#include "half_io.hpp"

#include <algorithm>

#include "kernels/carver.hpp"
#include "kernels/half.hpp"
#include "xattn/kv_cache.hpp"
#include "xattn/sdpa_backward.hpp"

namespace xattn {
namespace half_io {

std::uint64_t bytes(std::initializer_list<std::uint64_t> floats, std::uint64_t rest) {
    Carver c(nullptr);
    for (std::uint64_t n : floats) c.take<float>(n);
    c.take<unsigned char>(rest);
    return c.bytes();
}

void* carve(void* block, std::initializer_list<std::uint64_t> floats, float** copies) {
    Carver c(block);
    for (std::uint64_t n : floats) *copies++ = c.take<float>(n);
    return c.take<unsigned char>(0);
}

void widen(const std::uint16_t* from, std::size_t n, float* to) {
    for (std::size_t i = 0; i < n; ++i) to[i] = kernels::half_to_float(from[i]);
}

void narrow(const float* from, std::size_t n, std::uint16_t* to) {
    for (std::size_t i = 0; i < n; ++i) to[i] = kernels::float_to_half(from[i]);
}

}  // namespace half_io

namespace {

// Elements of a plan's tensors: query, key, value, output, weights (also the scores').
struct Counts {
    std::uint64_t q, k, v, out, weights;
};
Counts counts(const SdpaPlan& p) {
    return {std::uint64_t{p.problems} * p.L * p.E, std::uint64_t{p.kv_problems()} * p.S * p.E,
            std::uint64_t{p.kv_problems()} * p.S * p.Ev, std::uint64_t{p.problems} * p.L * p.Ev,
            std::uint64_t{p.problems} * p.L * p.S};
}

}  // namespace

std::uint64_t sdpa_half_workspace_bytes(const SdpaPlan& plan, std::uint64_t float32_bytes) {
    const Counts n = counts(plan);
    return half_io::bytes({n.q, n.k, n.v, n.out, plan.need_weights ? n.weights : 0,
                           plan.return_scores != ScoresStage::none ? n.weights : 0},
                          float32_bytes);
}

std::uint64_t sdpa_backward_half_workspace_bytes(const SdpaPlan& plan, std::uint64_t float32_bytes) {
    const Counts n = counts(plan);
    return half_io::bytes({n.q, n.k, n.v, n.out, n.out, n.q, n.k, n.v, plan.need_weights ? n.weights : 0}, float32_bytes);
}

void run_sdpa(const SdpaPlan& plan, const std::uint16_t* query, const std::uint16_t* key, const std::uint16_t* value,
              const MaskRef& mask, std::uint16_t* output, std::uint16_t* weights, void* workspace, std::uint16_t* scores) {
    const Counts n = counts(plan);
    const bool has_weights = plan.need_weights && weights, has_scores = plan.return_scores != ScoresStage::none && scores;
    float* c[6];  // q, k, v, output, weights, scores
    void* rest = half_io::carve(workspace, {n.q, n.k, n.v, n.out, plan.need_weights ? n.weights : 0,
                                            plan.return_scores != ScoresStage::none ? n.weights : 0}, c);
    if (plan.batch == 0) return;
    half_io::widen(query, n.q, c[0]);
    half_io::widen(key, n.k, c[1]);
    half_io::widen(value, n.v, c[2]);
    run_sdpa(plan, c[0], c[1], c[2], mask, c[3], has_weights ? c[4] : nullptr, rest, has_scores ? c[5] : nullptr);
    half_io::narrow(c[3], n.out, output);
    if (has_weights) half_io::narrow(c[4], n.weights, weights);
    if (has_scores) half_io::narrow(c[5], n.weights, scores);
}

void run_sdpa_backward(const SdpaPlan& plan, const std::uint16_t* query, const std::uint16_t* key,
                       const std::uint16_t* value, const MaskRef& mask, const std::uint16_t* grad_output,
                       std::uint16_t* output, std::uint16_t* grad_query, std::uint16_t* grad_key,
                       std::uint16_t* grad_value, std::uint16_t* weights, void* workspace) {
    const Counts n = counts(plan);
    const bool has_weights = plan.need_weights && weights;
    float* c[9];  // q, k, v, dO, output, dQ, dK, dV, weights
    void* rest = half_io::carve(workspace, {n.q, n.k, n.v, n.out, n.out, n.q, n.k, n.v, plan.need_weights ? n.weights : 0}, c);
    half_io::widen(query, n.q, c[0]);
    half_io::widen(key, n.k, c[1]);
    half_io::widen(value, n.v, c[2]);
    half_io::widen(grad_output, n.out, c[3]);
    run_sdpa_backward(plan, c[0], c[1], c[2], mask, c[3], c[4], c[5], c[6], c[7], has_weights ? c[8] : nullptr, rest);
    half_io::narrow(c[4], n.out, output);
    half_io::narrow(c[5], n.q, grad_query);
    half_io::narrow(c[6], n.k, grad_key);
    half_io::narrow(c[7], n.v, grad_value);
    if (has_weights) half_io::narrow(c[8], n.weights, weights);
}

}  // namespace xattn
