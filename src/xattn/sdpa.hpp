// scaled_dot_product_attention with the semantics of PyTorch's
// torch.nn.functional.scaled_dot_product_attention (math path, PyTorch >= 2.5).
//
// Two layers:
//   * plan_sdpa / run_sdpa work on raw row-major float buffers and never throw: plan_sdpa
//     validates every argument and returns a Status, run_sdpa computes a validated plan.
//     The wasm bindings use these so no C++ exception ever crosses into JavaScript.
//   * scaled_dot_product_attention takes xtensor arrays and throws std::invalid_argument
//     with the planner's message.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

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

// The scalar options, without the mask: what the raw layer (plan_sdpa) takes.
struct SdpaSettings {
    bool is_causal = false;                 // cannot be combined with a mask
    CausalAlignment causal_alignment = CausalAlignment::top_left;
    std::optional<double> scale;            // default 1/sqrt(E); its float32 value must be finite and non-zero
    double dropout_p = 0.0;                 // in [0, 1); applied to the weights
    std::uint64_t seed = 0;                 // dropout is a pure function of (seed, position)
    bool enable_gqa = false;                // query heads Hq may be a multiple of kv heads Hkv (dim -3)
    bool need_weights = false;              // also return the weights (…, L, S)
};

// The xtensor API's options: the settings and an owned mask.
struct SdpaOptions : SdpaSettings {
    Mask attn_mask;                         // optional; cannot be combined with is_causal
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
    float scale = 1.0f;
    bool is_causal = false;
    CausalAlignment causal_alignment = CausalAlignment::top_left;
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
    // Whether key j is visible to query i under the causal option.
    bool causal_visible(std::size_t i, std::size_t j) const {
        if (!is_causal) return true;
        if (causal_alignment == CausalAlignment::top_left) return j <= i;
        return static_cast<std::int64_t>(j) <= static_cast<std::int64_t>(i) + static_cast<std::int64_t>(S) - static_cast<std::int64_t>(L);
    }
};

// Validates shapes and options; on success fills *plan. Never throws.
Status plan_sdpa(const Shape& query, const Shape& key, const Shape& value, MaskKind mask_kind,
                 const Shape& mask_shape, const SdpaSettings& settings, SdpaPlan* plan);

// Computes a validated plan. `output` holds numel(plan.output_shape) floats; `weights` holds
// numel(plan.weights_shape) floats or is null; `workspace` holds plan.workspace_bytes. Allocates nothing
// and never throws. Runs the tiled SIMD kernels of src/kernels/ (see src/kernels/README.md); without
// weights it streams (online softmax) and never stores anything of size (L, S).
void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value,
              const MaskRef& mask, float* output, float* weights, void* workspace);
// The same with a workspace of its own (may throw std::bad_alloc).
void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value,
              const MaskRef& mask, float* output, float* weights);

// The same computation one query row at a time in plain C++: the readable baseline the kernels
// are tested against. Same contract as run_sdpa; its workspace is sdpa_rows_workspace_bytes(plan).
void run_sdpa_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                   const MaskRef& mask, float* output, float* weights, void* workspace);
void run_sdpa_rows(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                   const MaskRef& mask, float* output, float* weights);
std::uint64_t sdpa_rows_workspace_bytes(const SdpaPlan& plan);

// Dropout decision for weight (b, i, j): a pure function of the seed and the position,
// so every implementation (reference, kernels, wasm) drops the same weights.
bool dropout_keeps(std::uint64_t seed, double p, std::uint64_t position);

struct AttentionResult {
    xt::xarray<float> output;   // (…, L, Ev)
    xt::xarray<float> weights;  // (…, L, S) when asked for, else empty: shape (0,)
};

// Throws std::invalid_argument naming the argument and the shapes.
AttentionResult scaled_dot_product_attention(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                             const xt::xarray<float>& value, const SdpaOptions& options = {});

inline const SdpaSettings& settings_of(const SdpaOptions& options) { return options; }

}  // namespace xattn
