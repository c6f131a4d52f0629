// multi_head_attention with the semantics of torch.nn.MultiheadAttention: the forward (dropout in training calls)
// and the backward to the inputs and every parameter.
//
// Dims: E = embed_dim, H = num_heads, hd = E / H, N batch, L query length, S key length,
// kdim / vdim the key / value embedding sizes (default E).
//
// The masks follow PyTorch's MultiheadAttention, whose boolean polarity is the opposite of SDPA's:
//   key_padding_mask (N, S) or (S,) unbatched:  bool true = ignore this key, float = added
//   attn_mask        (L, S) or (N·H, L, S):     bool true = NOT allowed,     float = added
// One deliberate difference: a query row with every key masked gives output 0 and weights 0,
// where PyTorch gives NaN.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xattn/dims.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/xarray.hpp"

namespace xattn {

// torch.nn.MultiheadAttention's constructor arguments, under their PyTorch names.
struct MhaConfig {
    std::size_t embed_dim = 0;    // E, the model dim: a multiple of num_heads
    std::size_t num_heads = 1;    // H; each head attends over E / H dims
    std::size_t kdim = 0;  // 0 = embed_dim
    std::size_t vdim = 0;  // 0 = embed_dim
    bool bias = true;             // in_proj_bias and out_proj.bias
    bool batch_first = false;     // inputs (N, L, E) instead of (L, N, E)
    bool add_bias_kv = false;     // bias_k and bias_v: one learned key and value appended to every sequence
    bool add_zero_attn = false;   // one zero key and value appended after them
    double dropout = 0.0;         // PyTorch's `dropout`: on the attention weights, in [0, 1), when training
    std::uint64_t init_seed = 0;  // seeds the default (Xavier-uniform) initialisation
};

// The scalar options of a forward (or backward) call, without the masks: what the raw layer takes.
struct MhaSettings {
    bool need_weights = true;          // return the weights, as PyTorch does by default
    bool average_attn_weights = true;  // weights (N, L, S) averaged over heads, else (N, H, L, S)
    // The causal rule (top-left by default, as PyTorch's); beside attn_mask it is added to it (PyTorch takes
    // is_causal as a hint that the mask is causal: the same result whenever the hint is true).
    bool is_causal = false;
    bool training = false;   // apply config.dropout (module.train() in PyTorch); default as module.eval()
    std::uint64_t seed = 0;  // dropout is a pure function of (seed, position), as in scaled_dot_product_attention
    // The rules of scaled_dot_product_attention (xattn/sdpa.hpp), in every head: where row i sits among the keys,
    // the soft-cap, the window, ALiBi's slopes (one per head, H) and key lengths (one per batch element, N: the
    // keys from that many on are padding, as a key_padding_mask would make them). The window, ALiBi and key
    // lengths need keys with positions, which the add_bias_kv and add_zero_attn keys have not: they cannot be
    // combined with those.
    CausalAlignment causal_alignment = CausalAlignment::top_left;
    double softcap = 0.0;
    AttentionWindow window;
    std::vector<float> alibi_slopes;
    std::vector<std::int32_t> key_lengths;
};

// The xtensor API's options: the settings and owned masks.
struct MhaForwardOptions : MhaSettings {
    Mask key_padding_mask;  // MHA polarity: bool true = ignore
    Mask attn_mask;         // MHA polarity: bool true = not allowed
};

// Raw view of one forward call's masks for the no-throw layer.
struct MhaMasks {
    MaskRef key_padding_mask;
    MaskRef attn_mask;
};

// How the heads' attention sees the masks: the key padding mask, the attention mask and the causal rule
// become one SDPA mask of the smallest shape that holds them (N, H, L, S_total with 1 where a dim is not
// needed), boolean when every source is, and the causal rule stays SDPA's causal flag when it can.
struct MhaMaskPlan {
    MaskKind kind = MaskKind::none;  // of the SDPA mask built in the workspace (SDPA polarity)
    std::size_t n = 1, h = 1, l = 1;  // its dims before S_total: N or 1, H or 1, L or 1
    std::size_t s = 0;                // S_total
    bool causal_in_mask = false;      // the causal rule is written into the mask (appended keys stay visible)
    std::int64_t causal_shift = 0;    // … there: key j < S hidden from row i when j > i + causal_shift
    bool causal_flag = false;         // the causal rule is SDPA's is_causal (no appended keys to keep visible)
    std::size_t elements() const;
};

struct MhaPlan {
    bool batched = true;
    std::size_t N = 1, L = 0, S = 0;  // S before bias_kv / zero_attn columns
    std::size_t S_total = 0;          // S + add_bias_kv + add_zero_attn
    bool need_weights = true, average_attn_weights = true, is_causal = false;
    bool attn_mask_per_head = false;  // attn_mask is (N·H, L, S) rather than (L, S)
    bool backward = false;            // planned by plan_backward
    Shape output_shape;               // like query, with E
    Shape weights_shape;              // (N, L, S_total) or (N, H, L, S_total), without N when unbatched
    std::size_t query_rows = 0, key_rows = 0;  // rows of the inputs: L·N and S·N
    MhaMaskPlan mask;
    SdpaPlan attention;               // the heads' attention: q (N, H, L, hd), k and v (N, H, S_total, hd)
    std::uint64_t workspace_bytes = 0;  // what the run's workspace must hold (64-bit even in wasm32)
};

// The xtensor API's backward result: the forward output, the inputs' gradients, and every parameter's
// gradient under PyTorch's state_dict name, in its shape.
struct MhaGradientResult {
    xt::xarray<float> output;
    xt::xarray<float> grad_query, grad_key, grad_value;
    std::map<std::string, xt::xarray<float>> grad_parameters;
};

class MultiheadAttention {
public:
    // Checks a configuration without building anything.
    static Status check_config(const MhaConfig& config);
    // Bytes the parameters of a valid configuration take: one allocation.
    static std::size_t parameter_bytes(const MhaConfig& config);
    // Builds a module without throwing: a bad configuration, or parameters that cannot be allocated,
    // give an error. The wasm bindings create modules this way.
    static Status create(const MhaConfig& config, std::unique_ptr<MultiheadAttention>* out);
    // Throws std::invalid_argument for a bad configuration (std::bad_alloc if it cannot be allocated).
    explicit MultiheadAttention(const MhaConfig& config);

    const MhaConfig& config() const { return config_; }
    std::size_t kdim() const { return config_.kdim ? config_.kdim : config_.embed_dim; }
    std::size_t vdim() const { return config_.vdim ? config_.vdim : config_.embed_dim; }
    // PyTorch keeps q, k and v weights stacked in in_proj_weight exactly when kdim = vdim = E.
    bool packed_in_proj() const { return kdim() == config_.embed_dim && vdim() == config_.embed_dim; }

    // The parameters this configuration has, in the order of PyTorch's state_dict ("in_proj_weight" or
    // "q_proj_weight", "k_proj_weight", "v_proj_weight"; "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
    // "out_proj.bias"), each with where it starts among parameter_data() and its shape. The one table every
    // accessor, the gradients' layout and the bindings read.
    const std::vector<ParameterInfo>& parameters() const { return table_; }
    // The entry named `name`, or null when this configuration has no such parameter.
    const ParameterInfo* find_parameter(const std::string& name) const;
    // Every parameter's floats, parameter_floats() of them, laid out as parameters() says (the q, k and v weights
    // are adjacent, so in_proj_weight is one run).
    float* parameter_data() { return storage_.get(); }
    const float* parameter_data() const { return storage_.get(); }
    std::size_t parameter_floats() const { return parameter_floats(config_); }

    // Sets one parameter from `count` floats in PyTorch's row-major layout. Never throws.
    Status set_parameter(const std::string& name, const float* data, std::size_t count);
    // Sets one parameter, throwing std::invalid_argument on an unknown name or a wrong size.
    void set_parameter(const std::string& name, const xt::xarray<float>& value);
    // Copies one parameter, `count` floats in PyTorch's row-major layout, to `data`. Never throws.
    Status get_parameter(const std::string& name, float* data, std::size_t count) const;
    // Current value of one parameter, in PyTorch's shape.
    xt::xarray<float> parameter(const std::string& name) const;

    // Validates a forward call. Never throws.
    Status plan_forward(const Shape& query, const Shape& key, const Shape& value, MaskKind kpm_kind,
                        const Shape& kpm_shape, MaskKind attn_kind, const Shape& attn_shape,
                        const MhaSettings& settings, MhaPlan* plan) const;
    // Validates a backward call: the forward's rules, and grad_output shaped like the output. Never throws.
    Status plan_backward(const Shape& query, const Shape& key, const Shape& value, const Shape& grad_output,
                         MaskKind kpm_kind, const Shape& kpm_shape, MaskKind attn_kind, const Shape& attn_shape,
                         const MhaSettings& settings, MhaPlan* plan) const;
    // Runs a validated plan; `weights` may be null when !plan.need_weights; `workspace` holds
    // plan.workspace_bytes. Allocates nothing and never throws.
    void run_forward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                     const MhaMasks& masks, float* output, float* weights, void* workspace) const;
    // The same with a workspace of its own (may throw std::bad_alloc).
    void run_forward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                     const MhaMasks& masks, float* output, float* weights) const;

    // Runs a validated backward plan: the forward output, the gradients of Σ grad_output ⊙ output with
    // respect to query, key and value (shaped like them), and every parameter's gradient into
    // `grad_parameters` (parameter_floats(), laid out as parameters() says). `workspace` holds
    // plan.workspace_bytes. Allocates nothing and never throws.
    void run_backward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                      const MhaMasks& masks, const float* grad_output, float* output, float* grad_query,
                      float* grad_key, float* grad_value, float* grad_parameters, void* workspace) const;
    // The same for a caller that has just run run_forward(forward_plan, …) on the same inputs, masks and
    // parameters in this workspace (the encoder layer, whose forward keeps its activations): the projected heads,
    // the mask and the merged heads that forward left are used rather than computed again. `plan` is the
    // backward plan of the same call, `workspace` holds its workspace_bytes; `output` may be null (not written).
    void run_backward_after_forward(const MhaPlan& forward_plan, const MhaPlan& plan, const float* query,
                                    const float* key, const float* value, const MhaMasks& masks,
                                    const float* grad_output, float* output, float* grad_query, float* grad_key,
                                    float* grad_value, float* grad_parameters, void* workspace) const;

    // The xtensor API: throws std::invalid_argument naming the argument and the shapes.
    AttentionResult forward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                            const xt::xarray<float>& value, const MhaForwardOptions& options = {}) const;
    MhaGradientResult backward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                               const xt::xarray<float>& value, const xt::xarray<float>& grad_output,
                               const MhaForwardOptions& options = {}) const;

private:
    friend class TransformerEncoderLayer;  // run_self_backward_after_forward
    struct Scratch;
    struct BackwardScratch;
    // run_backward_after_forward for self-attention, query = key = value = x (the encoder layer's): writes the
    // gradient with respect to x, the sum of the three, into grad_x, from one product over the packed
    // in_proj_weight when self_packed(plan), and writes no output. grad_x has room for (3, rows, E): otherwise the
    // key's and value's gradients go after the query's and are added to it.
    void run_self_backward_after_forward(const MhaPlan& forward_plan, const MhaPlan& plan, const float* x,
                                         const MhaMasks& masks, const float* grad_output, float* grad_x,
                                         float* grad_parameters, void* workspace) const;
    // Whether the key and value of a self-attention call of this plan are its query's rows as they are, so that
    // their projections' gradients make one product: in_proj_weight packed, no appended key or value.
    bool self_packed(const MhaPlan& plan) const {
        return packed_in_proj() && !config_.add_bias_kv && !config_.add_zero_attn && plan.L == plan.S &&
               plan.query_rows == plan.key_rows;
    }
    Status plan_call(const Shape& query, const Shape& key, const Shape& value, MaskKind kpm_kind,
                     const Shape& kpm_shape, MaskKind attn_kind, const Shape& attn_shape,
                     const MhaSettings& settings, bool backward, MhaPlan* plan) const;
    // The steps forward and backward share (mha.cpp).
    void project_heads(const MhaPlan& plan, const float* query, const float* key, const float* value,
                       const Scratch& w) const;
    void build_mask(const MhaPlan& plan, const MhaMasks& masks, void* mask) const;
    void merge_heads(const MhaPlan& plan, const float* attn, float* merged) const;
    void project_out(const MhaPlan& plan, const float* attn, float* merged, float* output, const Scratch& w) const;
    // The backward's steps (mha_backward.cpp): every gradient set to 0 (false when there is nothing more to do),
    // the workspace's two parts, and the steps from the projected heads on (merged_ready: w.merged holds the
    // forward's merged heads already).
    bool clear_gradients(const MhaPlan& plan, float* output, float* grad_query, float* grad_key, float* grad_value,
                         float* grad_parameters) const;  // (a null gradient is skipped)
    void carve_backward(const MhaPlan& plan, void* workspace, Scratch* w, BackwardScratch* b) const;
    // (self_sum: grad_query receives the sum of the three inputs' gradients, key and value being the query,
    // and grad_key and grad_value are null; see run_self_backward_after_forward.)
    void backward_from_heads(const MhaPlan& plan, const float* query, const float* key, const float* value,
                             const float* grad_output, float* output, float* grad_query, float* grad_key,
                             float* grad_value, float* grad_parameters, bool merged_ready, bool self_sum,
                             const Scratch& w, const BackwardScratch& b) const;
    void in_projection_backward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                                float* grad_query, float* grad_key, float* grad_value, float* grad_parameters,
                                const BackwardScratch& b) const;
    void self_in_projection_backward(const MhaPlan& plan, const float* x, float* grad_x, float* grad_parameters,
                                     const BackwardScratch& b) const;
    static MaskRef mask_view(const MhaPlan& plan, const void* mask);
    static std::uint64_t forward_workspace(const MultiheadAttention& m, const MhaPlan& plan);
    static std::uint64_t backward_workspace(const MultiheadAttention& m, const MhaPlan& plan);
    // The refusal of a name this configuration lacks, or of a count that is not the parameter's size.
    Status check_parameter(const std::string& name, std::size_t count, const ParameterInfo** found) const;

    // A parameter's floats inside storage_.
    struct ParamSpan {
        float* ptr = nullptr;
        std::size_t n = 0;
        float* data() const { return ptr; }
        std::size_t size() const { return n; }
        float* begin() const { return ptr; }
        float* end() const { return ptr + n; }
    };
    struct FreeFloats {
        void operator()(float* p) const { std::free(p); }
    };
    using Storage = std::unique_ptr<float[], FreeFloats>;  // malloc'd: see create()
    static std::size_t parameter_floats(const MhaConfig& config);
    MultiheadAttention(const MhaConfig& config, Storage storage);

    MhaConfig config_;
    Storage storage_;  // every parameter, in one allocation (parameter_floats)
    std::vector<ParameterInfo> table_;  // what parameters() returns
    // Projections stored as PyTorch stores them: weight (out, in), bias (out).
    ParamSpan q_weight_, k_weight_, v_weight_;  // (E, E), (E, kdim), (E, vdim), adjacent
    ParamSpan in_bias_;                         // (3E): q, k, v biases
    ParamSpan out_weight_, out_bias_;           // (E, E), (E)
    ParamSpan bias_k_, bias_v_;                 // (E) each, shown as (1, 1, E)
};

}  // namespace xattn
