// Rotary position embeddings with the semantics of ONNX's RotaryEmbedding (opset 23): feature pair k of a row at
// position p turns by the angle p · base^(−2k / rotary_dim), k < rotary_dim / 2; the features from rotary_dim on pass
// through. The pairs are (k, k + rotary_dim / 2), Hugging Face's rotate_half (Llama, Mistral, Qwen, Gemma), or with
// `interleaved` (2k, 2k + 1), GPT-J's. Rows are x (…, L, D) with the layout of SDPA's query and key: row l of
// batch element n (the dims before -3) sits at position positions[n·L + l], positions[l] for every element, or
// position_offset + l. Angles are taken in float64 and rounded once to float32.
//
// The backward is the inverse rotation (the rotation is orthogonal): grad_x turns grad_output back by the same
// angles.
#pragma once

#include <cstdint>
#include <vector>

#include "xattn/xarray.hpp"

#include "xattn/dims.hpp"

namespace xattn {

// How features turn (what a KV cache's rotary option holds).
struct RotaryEmbedding {
    double base = 10000.0;        // θ of the frequencies base^(−2k / rotary_dim): finite and > 0
    std::size_t rotary_dim = 0;   // features rotated: even and at most D; 0 = all of D (then D must be even)
    bool interleaved = false;     // pairs (2k, 2k + 1) (GPT-J) instead of (k, k + rotary_dim / 2)
};

// … and where each row is.
struct RotarySettings : RotaryEmbedding {
    std::int64_t position_offset = 0;    // row l at position_offset + l, without `positions`
    std::vector<std::int64_t> positions; // empty, (L) for every batch element, or (B·L): in [0, 2^31)
};

struct RotaryPlan {
    Shape shape;                  // x's (…, L, D)
    std::size_t elements = 1;     // B: the dims before -3 (1 for 2-D and 3-D x)
    std::size_t heads = 1;        // dim -3 (1 for 2-D x)
    std::size_t L = 0, D = 0, rotary_dim = 0;
    RotaryEmbedding rule;
    std::int64_t position_offset = 0;
    std::vector<std::int64_t> positions;
    // Row l of element n's position.
    std::int64_t position(std::size_t n, std::size_t l) const;
};

// Validates x's shape and the settings, refusing by name ("apply_rotary_embedding: …"). Never throws.
Status plan_rotary(const Shape& x, const RotarySettings& settings, RotaryPlan* plan);
// out = the rotated x (numel(plan.shape) floats; out may be x). Allocates nothing, never throws.
void run_rotary(const RotaryPlan& plan, const float* x, float* out);
// grad_x = grad_output turned back (grad_x may be grad_output).
void run_rotary_backward(const RotaryPlan& plan, const float* grad_output, float* grad_x);
// The same on IEEE halves (uint16): each pair turned in float32, rounded to nearest even.
void run_rotary(const RotaryPlan& plan, const std::uint16_t* x, std::uint16_t* out);
void run_rotary_backward(const RotaryPlan& plan, const std::uint16_t* grad_output, std::uint16_t* grad_x);
// One row of D features at `position`, turned forward (or back, `inverse`); out may be in. For a KV cache's keys.
void rotate_row(const RotaryEmbedding& rule, std::size_t D, std::int64_t position, const float* in, float* out,
                bool inverse = false);

// The xtensor API: throws std::invalid_argument naming the argument and the shape.
xt::xarray<float> apply_rotary_embedding(const xt::xarray<float>& x, const RotarySettings& settings = {});
xt::xarray<float> apply_rotary_embedding_backward(const xt::xarray<float>& grad_output,
                                                  const RotarySettings& settings = {});

}  // namespace xattn
