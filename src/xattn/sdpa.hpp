// scaled_dot_product_attention with the semantics of PyTorch's
// torch.nn.functional.scaled_dot_product_attention (math path, PyTorch >= 2.5).
//
// Two layers:
//   * plan_sdpa / run_sdpa work on raw row-major float buffers and never throw: plan_sdpa
//     validates every argument and returns a Status, run_sdpa computes a validated plan.
//     The wasm bindings use these so no C++ exception ever crosses into JavaScript.
//   * scaled_dot_product_attention takes xtensor arrays and throws std::invalid_argument
//     with the planner's message.
//
// Beyond PyTorch, the rules of ONNX's Attention operator (opset 25) and FlashAttention's window. For query row i
// and key j of problem b, the row's position among the keys is p = i + offset, offset 0 (top-left alignment) or
// S_b − L (bottom-right), S_b the batch element's key length (key_lengths; S without them):
//   1. scores = Q·Kᵀ · scale
//   2. soft-cap, when softcap c > 0: scores = c · tanh(scores / c), before any mask (−inf stays −inf)
//   3. + the mask (a false boolean forbids, a float is added), and the rules, which forbid: j ≥ S_b (key
//      lengths), j > p (is_causal), j < p − left or j > p + right (the window; −1 leaves a side open); and
//      + slope_h · (j − p) (ALiBi, one slope per query head)
//   4. softmax over j; a row with no visible key gives zeros (output, weights, gradients), never NaN
//   5. output = weights · V
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "xattn/dims.hpp"
#include "xattn/xarray.hpp"

namespace xattn {

// Which keys a query may see when is_causal is set.
//   top_left     key j visible to query i when j <= i            (PyTorch's is_causal)
//   bottom_right key j visible to query i when j <= i + S - L    (the last query sees every key;
//                PyTorch offers it only through torch.nn.attention.bias.causal_lower_right)
enum class CausalAlignment { top_left, bottom_right };

enum class MaskKind { none, boolean, additive };

// A mask as the planner and kernels see it: borrowed, row-major, any shape that broadcasts
// to the weights' shape (…, L, S).
//   boolean:  non-zero byte = this query may attend to this key (SDPA polarity)
//   additive: added to the scaled scores (-inf forbids)
struct MaskRef {
    MaskKind kind = MaskKind::none;
    const std::uint8_t* bools = nullptr;  // kind == boolean
    const float* values = nullptr;        // kind == additive
    Shape shape;
};

// An owning mask for the xtensor API.
struct Mask {
    MaskKind kind = MaskKind::none;
    xt::xarray<bool> bools;
    xt::xarray<float> values;

    // What true means is the option's: SDPA's attn_mask, may attend; MultiheadAttention's masks, masked out.
    static Mask boolean(xt::xarray<bool> allowed);
    static Mask additive(xt::xarray<float> bias);   // added to the scaled scores (-inf forbids)
    MaskRef ref() const;                            // a borrowed view, valid while the mask lives
};

// The keys a query may see around its position p (FlashAttention's window_size, ONNX Attention's
// left_window_size and right_window_size): p − left ≤ j ≤ p + right; −1 leaves that side open.
struct AttentionWindow {
    std::int64_t left = -1;
    std::int64_t right = -1;
};

// Which (…, L, S) scores a call returns beside its output (ONNX Attention's qk_matmul_output):
//   scaled      Q·Kᵀ · scale
//   softcapped  after the soft-cap (the scaled scores when there is none)
//   biased      after the mask and the rules: what the softmax takes (−inf where a key is forbidden)
enum class ScoresStage { none, scaled, softcapped, biased };

// The options, without the mask: what the raw layer (plan_sdpa) takes.
struct SdpaSettings {
    bool is_causal = false;                 // key j visible to row i when j <= p; may be combined with a mask
    // Where row i sits among the keys (p = i, or i + S_b − L): places the causal rule, the window and ALiBi.
    CausalAlignment causal_alignment = CausalAlignment::top_left;
    std::optional<double> scale;            // default 1/sqrt(E); its float32 value must be finite and non-zero
    double softcap = 0.0;                   // > 0: scores = softcap · tanh(scores / softcap); 0: none
    AttentionWindow window;                 // default: every key
    std::vector<float> alibi_slopes;        // empty, or one finite slope per query head (Hq: query dim -3)
    // Empty, or one length per batch element (the query dims before -3; one for 3-D and 2-D inputs): keys from
    // that many on are padding. With bottom-right alignment, each element's rows align to its own length.
    std::vector<std::int32_t> key_lengths;
    double dropout_p = 0.0;                 // in [0, 1); applied to the weights
    std::uint64_t seed = 0;                 // dropout is a pure function of (seed, position)
    bool enable_gqa = false;                // query heads Hq may be a multiple of kv heads Hkv (dim -3)
    bool need_weights = false;              // also return the weights (…, L, S)
    ScoresStage return_scores = ScoresStage::none;  // also return the scores (…, L, S) at that stage
    // Inputs and outputs are IEEE halves (the uint16 run_sdpa): the workspace also holds their float32 copies.
    bool float16_io = false;
};

// The xtensor API's options: the settings and an owned mask.
struct SdpaOptions : SdpaSettings {
    Mask attn_mask;                         // optional
};

namespace kernels {
struct KernelSet;
}

// Everything a kernel needs, derived once from validated shapes.
struct SdpaPlan {
    Shape output_shape;   // (…, L, Ev)
    Shape weights_shape;  // (…, L, S)
    std::size_t problems = 0;    // number of (L, E) problems: product of query's leading dims
    // Problems the kernels compute: `problems`, or 0 when there is nothing to compute (an empty output
    // and no weights asked for), so that a huge leading dim beside a zero one never becomes a long loop.
    std::size_t batch = 0;
    std::size_t L = 0, S = 0, E = 0, Ev = 0;
    std::size_t q_heads = 1;     // Hq: query dim -3 (1 for 2-D inputs)
    std::size_t kv_heads = 1;    // Hkv: key/value dim -3
    std::size_t heads = 1;       // query dim -3 (1 for 2-D inputs): problems per batch element, ALiBi's heads
    float scale = 1.0f;
    bool is_causal = false;
    CausalAlignment causal_alignment = CausalAlignment::top_left;
    float softcap = 0.0f;
    AttentionWindow window;
    std::vector<float> alibi_slopes;         // (heads) or empty
    std::vector<std::int32_t> key_lengths;   // (problems / heads) or empty
    ScoresStage return_scores = ScoresStage::none;
    bool float16_io = false;     // run with uint16 halves: workspace_bytes counts their float32 copies
    double dropout_p = 0.0;
    std::uint64_t seed = 0;
    bool need_weights = false;
    MaskKind mask_kind = MaskKind::none;
    Shape mask_strides;          // one per weights dim, 0 where the mask broadcasts
    // The kernel set planned for (the active one when planning) and the scratch its run takes.
    const kernels::KernelSet* kernel_set = nullptr;
    std::size_t workspace_bytes = 0;
    unsigned threads = 1;        // num_threads() when planned (xattn/threads.hpp); the workspace holds their scratch

    // Key/value problems: the product of key's leading dims. Stored rather than derived from `problems`, which
    // loses B when Hq = 0 under enable_gqa (key (B, Hkv, S, E) still has gradients to zero then).
    std::size_t kv_problem_count = 0;
    std::size_t kv_problems() const { return kv_problem_count; }
    // Which key/value problem query problem b reads (GQA: query head h uses kv head h / (Hq/Hkv)).
    std::size_t kv_index(std::size_t b) const {
        const std::size_t outer = b / q_heads, h = b % q_heads;
        return outer * kv_heads + h / (q_heads / kv_heads);
    }
    // Offset of mask element (b, i, 0) and the step from key j to j + 1.
    std::size_t mask_row_offset(std::size_t b, std::size_t i) const;
    std::size_t mask_col_stride() const { return mask_strides.empty() ? 0 : mask_strides.back(); }
    // A visible key's scaled score with the mask applied: a false boolean forbids (-inf), a float is
    // added. `at` is mask_row_offset(b, i) + j * mask_col_stride().
    float apply_mask(float scaled, const MaskRef& mask, std::size_t at) const {
        if (mask_kind == MaskKind::boolean && !mask.bools[at]) return -std::numeric_limits<float>::infinity();
        if (mask_kind == MaskKind::additive) return scaled + mask.values[at];
        return scaled;
    }
    // Problem b's keys (its batch element's key length, or S) and the offset of its rows' positions.
    std::size_t key_length(std::size_t b) const;
    std::int64_t position_offset(std::size_t b) const;
    // Whether key j is visible to row i of problem b under the rules (key lengths, causal, window); the mask
    // is apply_mask's.
    bool key_visible(std::size_t b, std::size_t i, std::size_t j) const;
    // ALiBi's bias of key j for row i of problem b: slope · (j − p), 0 without slopes.
    float alibi_bias(std::size_t b, std::size_t i, std::size_t j) const;
    // The soft-cap of a scaled score: c · tanh(s / c), or s without one.
    float cap(float scaled) const;
};

// The checks of the rules' options that need no shapes (soft-cap, window), refused as calls of `fn`:
// plan_sdpa, MultiheadAttention and the KV cache share them.
Status check_rule_settings(Function fn, double softcap, const AttentionWindow& window);

// Validates shapes and options; on success fills *plan. Never throws.
Status plan_sdpa(const Shape& query, const Shape& key, const Shape& value, MaskKind mask_kind,
                 const Shape& mask_shape, const SdpaSettings& settings, SdpaPlan* plan);

// Computes a validated plan. `output` holds numel(plan.output_shape) floats; `weights` holds
// numel(plan.weights_shape) floats or is null; `scores` likewise, for plan.return_scores; `workspace` holds
// plan.workspace_bytes. Allocates nothing and never throws. Runs the tiled SIMD kernels of src/kernels/ (see
// src/kernels/README.md); without weights it streams (online softmax) and never stores anything of size (L, S).
void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value,
              const MaskRef& mask, float* output, float* weights, void* workspace, float* scores = nullptr);
// The same with a workspace of its own (may throw std::bad_alloc).
void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value,
              const MaskRef& mask, float* output, float* weights);
// A plan made with float16_io: inputs and outputs as IEEE halves (uint16), computed in float32 in the workspace
// and rounded to nearest even; the mask stays bytes or float32.
void run_sdpa(const SdpaPlan& plan, const std::uint16_t* query, const std::uint16_t* key, const std::uint16_t* value,
              const MaskRef& mask, std::uint16_t* output, std::uint16_t* weights, void* workspace,
              std::uint16_t* scores = nullptr);

// The same computation one query row at a time in plain C++: the readable baseline the kernels
// are tested against. Same contract as run_sdpa; its workspace is sdpa_rows_workspace_bytes(plan).
void run_sdpa_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                   const MaskRef& mask, float* output, float* weights, void* workspace, float* scores = nullptr);
void run_sdpa_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                   const MaskRef& mask, float* output, float* weights);
std::uint64_t sdpa_rows_workspace_bytes(const SdpaPlan& plan);

// Dropout decision for weight (b, i, j): a pure function of the seed and the position,
// so every implementation (reference, kernels, wasm) drops the same weights.
bool dropout_keeps(std::uint64_t seed, double p, std::uint64_t position);

struct AttentionResult {
    xt::xarray<float> output;   // (…, L, Ev)
    xt::xarray<float> weights;  // (…, L, S) when asked for, else empty: shape (0,)
    xt::xarray<float> scores;   // (…, L, S) when return_scores asks for them, else empty: shape (0,)
};

// Throws std::invalid_argument naming the argument and the shapes.
AttentionResult scaled_dot_product_attention(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                             const xt::xarray<float>& value, const SdpaOptions& options = {});

inline const SdpaSettings& settings_of(const SdpaOptions& options) { return options; }

}  // namespace xattn
