// TransformerEncoderLayer with the semantics of torch.nn.TransformerEncoderLayer: self-attention and a
// feed-forward block, each with a residual connection and a LayerNorm, forward and backward to the input and
// every parameter.
//
// Dims: E = d_model, H = nhead, F = dim_feedforward, N batch, L sequence length; R = L·N rows, in src's order.
//
//   post-norm (norm_first = false)                 pre-norm (norm_first = true)
//   x = norm1(x + sa(x))                           x = x + sa(norm1(x))
//   x = norm2(x + ff(x))                           x = x + ff(norm2(x))
//   sa(x) = dropout1(self_attn(x, x, x))           ff(x) = dropout2(linear2(dropout(activation(linear1(x)))))
//
// Dropout (training only) is applied where PyTorch applies it: to the attention weights (inside self_attn)
// and by dropout1, dropout and dropout2. Each is a pure function of (seed, position), as in
// scaled_dot_product_attention: the attention weights with `seed` at MultiheadAttention's positions
// ((n·H + h)·L + i)·L + j, and the other three with seed + 1, seed + 2 and seed + 3 at each element's index in
// its tensor as laid out ((L, N, E) or (N, L, E), (L, N, F) or (N, L, F); unbatched (L, E), (L, F)).
//
// Masks as PyTorch's layer takes them (MultiheadAttention's polarity): src_mask (L, L) or (N·H, L, L), bool
// true = not allowed or float added; src_key_padding_mask (N, L), or (L,) unbatched, bool true = ignore this
// position or float added. is_causal applies the top-left causal mask when src_mask is absent (with a src_mask
// it is a hint, as in PyTorch, and the mask is used as given). A position whose every key is masked attends to
// nothing (attention output 0), where PyTorch gives NaN.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xattn/dims.hpp"
#include "xattn/layers.hpp"
#include "xattn/mha.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/xarray.hpp"

namespace xattn {

struct EncoderLayerConfig {
    std::size_t d_model = 0;
    std::size_t nhead = 1;
    std::size_t dim_feedforward = 2048;
    double dropout = 0.1;  // in [0, 1); applied only in training calls
    Activation activation = Activation::relu;
    double layer_norm_eps = 1e-5;
    bool batch_first = false;
    bool norm_first = false;
    std::uint64_t init_seed = 0;  // seeds the default initialisation (PyTorch's distributions, not its values)
};

// The scalar options of a call, without the masks.
struct EncoderLayerSettings {
    bool is_causal = false;
    bool training = false;  // apply config.dropout (module.train() in PyTorch); default as module.eval()
    std::uint64_t seed = 0;
};

// The xtensor API's options: the settings and owned masks.
struct EncoderLayerOptions : EncoderLayerSettings {
    Mask src_mask;              // MHA polarity: bool true = not allowed
    Mask src_key_padding_mask;  // MHA polarity: bool true = ignore
};

// Raw view of a call's masks for the no-throw layer.
struct EncoderLayerMasks {
    MaskRef src_mask;
    MaskRef src_key_padding_mask;
};

struct EncoderLayerPlan {
    bool batched = true;
    std::size_t N = 1, L = 0, rows = 0;  // rows = L·N
    Shape output_shape;                  // src's
    bool training = false;
    std::uint64_t seed = 0;
    bool backward = false;  // planned by plan_backward
    MhaPlan attention;      // self_attn's forward, without weights
    MhaPlan attention_backward;  // self_attn's backward (backward plans only)
    const kernels::KernelSet* kernel_set = nullptr;
    unsigned threads = 1;
    std::uint64_t workspace_bytes = 0;  // what the run's workspace must hold (64-bit even in wasm32)
};

// The xtensor API's backward result: the forward output, the input's gradient and every parameter's gradient
// under PyTorch's state_dict name, in its shape.
struct EncoderLayerGradients {
    xt::xarray<float> output, grad_src;
    std::map<std::string, xt::xarray<float>> grad_parameters;
};

class TransformerEncoderLayer;

// What a forward kept for its backward (TransformerEncoderLayer::forward_saving): the layer's activations for
// that call, with what they were computed from. A stack of layers runs every forward before any backward; kept,
// the activations spare each backward its forward again (a third of the layer's products).
class EncoderLayerSaved {
public:
    const xt::xarray<float>& output() const { return output_; }
    // Moved, never copied: the activations are laid out from the workspace's own alignment.
    EncoderLayerSaved(EncoderLayerSaved&&) = default;
    EncoderLayerSaved& operator=(EncoderLayerSaved&&) = default;
    EncoderLayerSaved(const EncoderLayerSaved&) = delete;
    EncoderLayerSaved& operator=(const EncoderLayerSaved&) = delete;

private:
    friend class TransformerEncoderLayer;
    EncoderLayerSaved() = default;
    const TransformerEncoderLayer* layer_ = nullptr;
    EncoderLayerPlan plan_;  // a backward plan: its workspace holds the activations
    EncoderLayerOptions options_;
    xt::xarray<float> src_, output_;
    std::vector<float> parameters_;  // as the forward used them: a backward after a change is refused
    std::vector<unsigned char> workspace_;
};

class TransformerEncoderLayer {
public:
    static Status check_config(const EncoderLayerConfig& config);
    // Builds a layer without throwing: a bad configuration, or parameters that cannot be allocated, give an error.
    static Status create(const EncoderLayerConfig& config, std::unique_ptr<TransformerEncoderLayer>* out);
    // Throws std::invalid_argument for a bad configuration (std::bad_alloc if it cannot be allocated).
    explicit TransformerEncoderLayer(const EncoderLayerConfig& config);

    const EncoderLayerConfig& config() const { return config_; }
    const MultiheadAttention& self_attn() const { return *self_attn_; }

    // Every parameter, in PyTorch's state_dict order: self_attn.in_proj_weight (3E, E), self_attn.in_proj_bias
    // (3E), self_attn.out_proj.weight (E, E), self_attn.out_proj.bias (E), linear1.weight (F, E), linear1.bias (F),
    // linear2.weight (E, F), linear2.bias (E), norm1.weight, norm1.bias, norm2.weight, norm2.bias (E each), each
    // with where it starts in the flat layout (values and gradients alike) and its shape: the one table every
    // accessor, the gradients' layout and the bindings read.
    const std::vector<ParameterInfo>& parameters() const { return table_; }
    // Floats of all parameters: the length of the flat layout.
    std::size_t parameter_floats() const;
    // The entry named `name`, or null.
    const ParameterInfo* find_parameter(const std::string& name) const;
    // Sets / copies one parameter, `count` floats in PyTorch's layout. Never throw.
    Status set_parameter(const std::string& name, const float* data, std::size_t count);
    Status get_parameter(const std::string& name, float* data, std::size_t count) const;
    // Where the values live, for callers that write them in place (the wasm bindings): self_attn's parameters
    // (offsets below self_attn().parameter_floats()) at self_attn_data() + offset, the others at
    // rest_data() + (offset - self_attn().parameter_floats()).
    float* self_attn_data() { return self_attn_->parameter_data(); }
    float* rest_data() { return storage_.get(); }
    // Every parameter at once, in the flat layout (parameter_floats() floats).
    void set_parameters(const float* data);
    void get_parameters(float* data) const;
    // The xtensor API: throws std::invalid_argument on an unknown name or a wrong size.
    void set_parameter(const std::string& name, const xt::xarray<float>& value);
    xt::xarray<float> parameter(const std::string& name) const;

    // Validates a forward call (src and the masks' kinds and shapes). Never throws.
    Status plan_forward(const Shape& src, MaskKind src_mask_kind, const Shape& src_mask_shape,
                        MaskKind key_padding_kind, const Shape& key_padding_shape,
                        const EncoderLayerSettings& settings, EncoderLayerPlan* plan) const;
    // The forward's rules, and grad_output shaped like the output. Never throws.
    Status plan_backward(const Shape& src, const Shape& grad_output, MaskKind src_mask_kind,
                         const Shape& src_mask_shape, MaskKind key_padding_kind, const Shape& key_padding_shape,
                         const EncoderLayerSettings& settings, EncoderLayerPlan* plan) const;
    // Runs a validated plan; `workspace` holds plan.workspace_bytes. Allocates nothing and never throws.
    void run_forward(const EncoderLayerPlan& plan, const float* src, const EncoderLayerMasks& masks, float* output,
                     void* workspace) const;
    // Runs a validated backward plan: the forward output, the gradient of Σ grad_output ⊙ output with respect to
    // src, and every parameter's gradient into grad_parameters (parameter_floats(), laid out as
    // parameter_table() says). Allocates nothing and never throws.
    void run_backward(const EncoderLayerPlan& plan, const float* src, const EncoderLayerMasks& masks,
                      const float* grad_output, float* output, float* grad_src, float* grad_parameters,
                      void* workspace) const;

    // run_backward in two halves, for a caller that runs the forward now and the backward later:
    // run_forward_saving runs a backward plan's forward and leaves in `workspace` (plan.workspace_bytes) what the
    // backward needs; run_backward_saved, given that workspace untouched and the same src, masks and parameters,
    // finishes the backward (grad_src and every parameter's gradient). Allocate nothing and never throw.
    void run_forward_saving(const EncoderLayerPlan& plan, const float* src, const EncoderLayerMasks& masks,
                            float* output, void* workspace) const;
    void run_backward_saved(const EncoderLayerPlan& plan, const float* src, const EncoderLayerMasks& masks,
                            const float* grad_output, float* grad_src, float* grad_parameters,
                            void* workspace) const;
    // Whether `parameters` (parameter_floats() floats) are this layer's, bit for bit.
    bool parameters_equal(const float* parameters) const;

    // The xtensor API: throws std::invalid_argument naming the argument and the shapes.
    xt::xarray<float> forward(const xt::xarray<float>& src, const EncoderLayerOptions& options = {}) const;
    EncoderLayerGradients backward(const xt::xarray<float>& src, const xt::xarray<float>& grad_output,
                                   const EncoderLayerOptions& options = {}) const;
    // The forward, keeping its activations for one backward(saved, grad_output); that backward gives what
    // backward(src, grad_output, options) gives, bit for bit, and refuses (std::invalid_argument) a `saved` of
    // another layer, or one whose forward ran with other parameters than the layer holds now.
    EncoderLayerSaved forward_saving(const xt::xarray<float>& src, const EncoderLayerOptions& options = {}) const;
    EncoderLayerGradients backward(const EncoderLayerSaved& saved, const xt::xarray<float>& grad_output) const;

private:
    struct Scratch;
    struct FreeFloats {
        void operator()(float* p) const { std::free(p); }
    };
    using Storage = std::unique_ptr<float[], FreeFloats>;  // malloc'd: see create()
    TransformerEncoderLayer(const EncoderLayerConfig& config, std::unique_ptr<MultiheadAttention> self_attn,
                            Storage storage);
    static std::size_t own_floats(const EncoderLayerConfig& config);  // parameters beside self_attn's
    Status plan_call(const Shape& src, MaskKind src_mask_kind, const Shape& src_mask_shape, MaskKind key_padding_kind,
                     const Shape& key_padding_shape, const EncoderLayerSettings& settings, bool backward,
                     EncoderLayerPlan* plan) const;
    // The forward's steps, keeping what the backward needs in `w` (transformer_layer.cpp).
    void forward_steps(const EncoderLayerPlan& plan, const float* src, const EncoderLayerMasks& masks, float* output,
                       const Scratch& w) const;
    // The backward's steps through the feed-forward block and the norm between the blocks, to dh1 (the gradient
    // reaching x + attn) in `w`.
    void feed_forward_backward(const EncoderLayerPlan& plan, const float* grad_output, float* grad_parameters,
                               const Scratch& w) const;
    // Flat gradients (parameter_floats()) by name, each in its parameter's shape.
    std::map<std::string, xt::xarray<float>> gradient_map(const std::vector<float>& grads) const;
    const float* own(const std::string& name) const;  // a parameter beside self_attn's, in storage_
    // The refusal of a name the layer lacks, or of a count that is not the parameter's size.
    Status check_parameter(const std::string& name, std::size_t count, const ParameterInfo** found) const;

    EncoderLayerConfig config_;
    std::unique_ptr<MultiheadAttention> self_attn_;  // self_attn.*: its own storage
    Storage storage_;                                // linear1, linear2, norm1, norm2, in table order
    std::vector<ParameterInfo> table_;
};

}  // namespace xattn
