// torch.nn.TransformerEncoderLayer: its parameters, planning, and the forward (xattn/transformer.hpp).
#include "xattn/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "alloc_room.hpp"
#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"
#include "transformer_internal.hpp"
#include "xattn/threads.hpp"

namespace xattn {
namespace {

constexpr Function kFn = Function::encoder_create;
constexpr const char* kAttn = "self_attn.";
constexpr std::size_t kAttnLength = 10;  // "self_attn."

double num(std::size_t n) { return static_cast<double>(n); }

MhaConfig attention_config(const EncoderLayerConfig& c) {
    MhaConfig m;
    m.embed_dim = c.d_model;
    m.num_heads = c.nhead;
    m.batch_first = c.batch_first;
    m.dropout = c.dropout;
    m.init_seed = c.init_seed;
    return m;
}

// The parameters beside self_attn's, in storage order, with their shapes.
std::vector<std::pair<std::string, Shape>> own_shapes(const EncoderLayerConfig& c) {
    const std::size_t E = c.d_model, F = c.dim_feedforward;
    return {{"linear1.weight", {F, E}}, {"linear1.bias", {F}},   {"linear2.weight", {E, F}}, {"linear2.bias", {E}},
            {"norm1.weight", {E}},      {"norm1.bias", {E}},     {"norm2.weight", {E}},      {"norm2.bias", {E}}};
}

}  // namespace

Status TransformerEncoderLayer::check_config(const EncoderLayerConfig& c) {
    if (c.d_model == 0 || c.nhead == 0)
        return Status::fail(kFn, Message::dims_not_positive, {Argument::d_model, Argument::nhead},
                            {num(c.d_model), num(c.nhead)});
    if (c.d_model % c.nhead != 0)
        return Status::fail(kFn, Message::heads_not_divisor, {Argument::d_model, Argument::nhead},
                            {num(c.d_model), num(c.nhead)});
    if (c.dim_feedforward == 0)
        return Status::fail(kFn, Message::dim_not_positive, {Argument::dim_feedforward}, {0.0});
    if (!(c.dropout >= 0.0 && c.dropout < 1.0))
        return Status::fail(kFn, Message::probability_range, {Argument::dropout}, {c.dropout});
    if (!(c.layer_norm_eps >= 0.0 && std::isfinite(c.layer_norm_eps)))
        return Status::fail(kFn, Message::finite_nonnegative, {Argument::layer_norm_eps}, {c.layer_norm_eps});
    if (c.activation != Activation::relu && c.activation != Activation::gelu)
        return Status::fail(kFn, Message::activation_unknown, {Argument::activation});
    if (Status st = check_tensor_size(kFn, Argument::linear1_weight, {c.dim_feedforward, c.d_model}); !st.ok())
        return st;
    return MultiheadAttention::check_config(attention_config(c)).as(kFn);
}

std::size_t TransformerEncoderLayer::own_floats(const EncoderLayerConfig& c) {
    std::size_t n = 0;
    for (const auto& [name, shape] : own_shapes(c)) n += numel(shape);
    return n;
}

Status TransformerEncoderLayer::create(const EncoderLayerConfig& config, std::unique_ptr<TransformerEncoderLayer>* out) {
    if (Status st = check_config(config); !st.ok()) return st;
    std::unique_ptr<MultiheadAttention> attn;
    if (Status st = MultiheadAttention::create(attention_config(config), &attn); !st.ok()) return st.as(kFn);
    // malloc, not new: in wasm (built without exceptions) even a nothrow new aborts the module when it fails.
    Storage storage(static_cast<float*>(std::malloc(own_floats(config) * sizeof(float))));
    if (!detail::allocated_with_room(storage.get()))  // the layer object and its table are small
        return Status::fail(kFn, Message::parameters_too_large, {Argument::d_model},
                            {num(config.d_model), num(own_floats(config) * sizeof(float))});
    out->reset(new TransformerEncoderLayer(config, std::move(attn), std::move(storage)));
    return {};
}

TransformerEncoderLayer::TransformerEncoderLayer(const EncoderLayerConfig& config)
    : TransformerEncoderLayer(config, [&config] {
          if (Status st = check_config(config); !st.ok()) throw std::invalid_argument(st.message());
          return std::make_unique<MultiheadAttention>(attention_config(config));
      }(), [&config] {
          Storage storage(static_cast<float*>(std::malloc(own_floats(config) * sizeof(float))));
          if (!storage) throw std::bad_alloc();
          return storage;
      }()) {}

TransformerEncoderLayer::TransformerEncoderLayer(const EncoderLayerConfig& config,
                                                 std::unique_ptr<MultiheadAttention> self_attn, Storage storage)
    : config_(config), self_attn_(std::move(self_attn)), storage_(std::move(storage)) {
    // The table: self_attn's parameters where its own layout puts them (PyTorch's order), then the rest.
    for (const ParameterInfo& p : self_attn_->parameters()) table_.push_back({kAttn + p.name, p.offset, p.shape});
    std::size_t at = self_attn_->parameter_floats();
    for (auto& [name, shape] : own_shapes(config)) {
        table_.push_back({name, at, shape});
        at += numel(shape);
    }
    // PyTorch's initialisation (its distributions): nn.Linear's uniform(±1/sqrt(in)) weights and biases,
    // LayerNorm's weight 1 and bias 0; self_attn initialised itself. A splitmix64 stream, as MultiheadAttention's.
    std::uint64_t state = config.init_seed ^ 0x5851f42d4c957f2dull;  // not self_attn's stream
    auto next_unit = [&state] {  // uniform in [0, 1)
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
    };
    const double E = static_cast<double>(config.d_model), F = static_cast<double>(config.dim_feedforward);
    for (const ParameterInfo& p : table_) {
        if (p.name.rfind(kAttn, 0) == 0) continue;
        float* v = storage_.get() + (p.offset - self_attn_->parameter_floats());
        const std::size_t n = numel(p.shape);
        const double bound = 1.0 / std::sqrt(p.name.rfind("linear1", 0) == 0 ? E : F);
        if (p.name.rfind("norm", 0) == 0)
            std::fill(v, v + n, p.name.find("weight") != std::string::npos ? 1.0f : 0.0f);
        else
            for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((2.0 * next_unit() - 1.0) * bound);
    }
}

std::size_t TransformerEncoderLayer::parameter_floats() const {
    return table_.back().offset + numel(table_.back().shape);  // the table's last entry ends the layout
}

const ParameterInfo* TransformerEncoderLayer::find_parameter(const std::string& name) const {
    for (const ParameterInfo& p : table_)
        if (p.name == name) return &p;
    return nullptr;
}

const float* TransformerEncoderLayer::own(const std::string& name) const {
    return storage_.get() + (find_parameter(name)->offset - self_attn_->parameter_floats());
}

namespace {

Status unknown_parameter(const std::vector<ParameterInfo>& table, const std::string& name) {
    std::string known;  // only refusals build text: a valid call allocates nothing
    for (const ParameterInfo& p : table) known += (known.empty() ? "" : ", ") + p.name;
    return Status::fail(Function::encoder_parameters, Message::parameter_unknown, {}, {}, {}, {name, known});
}

}  // namespace

Status TransformerEncoderLayer::check_parameter(const std::string& name, std::size_t count,
                                                const ParameterInfo** found) const {
    *found = find_parameter(name);
    if (!*found) return unknown_parameter(table_, name);
    if (count != (*found)->size())
        return Status::fail(Function::encoder_parameters, Message::parameter_size, {}, {num((*found)->size()), num(count)},
                            {(*found)->shape}, {name});
    return {};
}

Status TransformerEncoderLayer::set_parameter(const std::string& name, const float* data, std::size_t count) {
    const ParameterInfo* p = nullptr;
    if (Status st = check_parameter(name, count, &p); !st.ok()) return st;
    if (name.compare(0, kAttnLength, kAttn) == 0)
        std::copy(data, data + count, self_attn_->parameter_data() + p->offset);
    else
        std::copy(data, data + count, storage_.get() + (p->offset - self_attn_->parameter_floats()));
    return {};
}

Status TransformerEncoderLayer::get_parameter(const std::string& name, float* data, std::size_t count) const {
    const ParameterInfo* p = nullptr;
    if (Status st = check_parameter(name, count, &p); !st.ok()) return st;
    const float* from = name.compare(0, kAttnLength, kAttn) == 0
                            ? self_attn_->parameter_data() + p->offset
                            : storage_.get() + (p->offset - self_attn_->parameter_floats());
    std::copy(from, from + count, data);
    return {};
}

void TransformerEncoderLayer::set_parameters(const float* data) {
    const std::size_t attn = self_attn_->parameter_floats();
    std::copy(data, data + attn, self_attn_->parameter_data());
    std::copy(data + attn, data + parameter_floats(), storage_.get());
}

void TransformerEncoderLayer::get_parameters(float* data) const {
    const std::size_t attn = self_attn_->parameter_floats();
    std::copy(self_attn_->parameter_data(), self_attn_->parameter_data() + attn, data);
    std::copy(storage_.get(), storage_.get() + (parameter_floats() - attn), data + attn);
}

void TransformerEncoderLayer::set_parameter(const std::string& name, const xt::xarray<float>& value) {
    const ParameterInfo* p = find_parameter(name);
    if (!p) throw std::invalid_argument(unknown_parameter(table_, name).message());
    const Shape shape(value.shape().begin(), value.shape().end());
    if (shape != p->shape)
        throw std::invalid_argument(
            Status::fail(Function::encoder_parameters, Message::parameter_shape, {}, {}, {p->shape, shape}, {name})
                .message());
    if (Status st = set_parameter(name, value.data(), value.size()); !st.ok()) throw std::invalid_argument(st.message());
}

xt::xarray<float> TransformerEncoderLayer::parameter(const std::string& name) const {
    const ParameterInfo* p = find_parameter(name);
    if (!p) throw std::invalid_argument(unknown_parameter(table_, name).message());
    xt::xarray<float> value = xt::xarray<float>::from_shape(p->shape);
    if (Status st = get_parameter(name, value.data(), value.size()); !st.ok()) throw std::invalid_argument(st.message());
    return value;
}

Status TransformerEncoderLayer::plan_forward(const Shape& src, MaskKind src_mask_kind, const Shape& src_mask_shape,
                                             MaskKind key_padding_kind, const Shape& key_padding_shape,
                                             const EncoderLayerSettings& settings, EncoderLayerPlan* plan) const {
    return plan_call(src, src_mask_kind, src_mask_shape, key_padding_kind, key_padding_shape, settings, false, plan);
}

Status TransformerEncoderLayer::plan_backward(const Shape& src, const Shape& grad_output, MaskKind src_mask_kind,
                                              const Shape& src_mask_shape, MaskKind key_padding_kind,
                                              const Shape& key_padding_shape, const EncoderLayerSettings& settings,
                                              EncoderLayerPlan* plan) const {
    EncoderLayerPlan p;
    if (Status st = plan_call(src, src_mask_kind, src_mask_shape, key_padding_kind, key_padding_shape, settings, true, &p);
        !st.ok())
        return st;
    if (grad_output != p.output_shape)
        return Status::fail(Function::encoder_backward, Message::shape_mismatch, {Argument::grad_output, Argument::src},
                            {}, {grad_output, src});
    *plan = std::move(p);
    return {};
}

Status TransformerEncoderLayer::plan_call(const Shape& src, MaskKind src_mask_kind, const Shape& src_mask_shape,
                                          MaskKind key_padding_kind, const Shape& key_padding_shape,
                                          const EncoderLayerSettings& settings, bool backward,
                                          EncoderLayerPlan* plan) const {
    const Function fn = backward ? Function::encoder_backward : Function::encoder_forward;
    const std::size_t E = config_.d_model, H = config_.nhead, F = config_.dim_feedforward;
    if (src.size() != 2 && src.size() != 3)
        return Status::fail(fn, config_.batch_first ? Message::encoder_src_rank_batch_first : Message::encoder_src_rank_seq_first,
                            {Argument::src}, {}, {src});
    if (src.back() != E)
        return Status::fail(fn, Message::encoder_src_dim, {Argument::src, Argument::d_model}, {num(src.back()), num(E)},
                            {src});
    const bool batched = src.size() == 3, bf = config_.batch_first && batched;
    const std::size_t L = src[bf ? 1 : 0], N = batched ? src[bf ? 0 : 1] : 1;
    if (key_padding_kind != MaskKind::none) {
        const Shape want = batched ? Shape{N, L} : Shape{L};
        if (key_padding_shape != want)
            return Status::fail(fn, batched ? Message::encoder_padding_shape : Message::encoder_padding_shape_unbatched,
                                {Argument::src_key_padding_mask, Argument::src}, {}, {src, key_padding_shape, want});
    }
    if (src_mask_kind != MaskKind::none) {
        const Shape two{L, L}, three{N * H, L, L};
        if (src_mask_shape != two && src_mask_shape != three)
            return Status::fail(fn, Message::encoder_mask_shape, {Argument::src_mask, Argument::src}, {},
                                {src, src_mask_shape, two, three});
    }
    if (Status st = check_tensor_size(fn, Argument::feedforward_activations, {L * N, F}); !st.ok()) return st;

    EncoderLayerPlan p;
    p.batched = batched;
    p.N = N, p.L = L, p.rows = L * N;
    p.output_shape = src;
    p.training = settings.training;
    p.seed = settings.seed;
    p.backward = backward;
    MhaSettings attention;
    attention.need_weights = false;
    attention.is_causal = settings.is_causal;
    attention.training = settings.training;
    attention.seed = settings.seed;
    // (The shapes are valid for self_attn now: only its size limits can refuse, under the layer's name.)
    if (Status st = self_attn_->plan_forward(src, src, src, key_padding_kind, key_padding_shape, src_mask_kind,
                                             src_mask_shape, attention, &p.attention);
        !st.ok())
        return st.as(fn);
    if (backward)
        if (Status st = self_attn_->plan_backward(src, src, src, src, key_padding_kind, key_padding_shape, src_mask_kind,
                                                  src_mask_shape, attention, &p.attention_backward);
            !st.ok())
            return st.as(fn);
    p.kernel_set = p.attention.attention.kernel_set;
    p.threads = p.attention.attention.threads;
    Carver counter(nullptr);
    Scratch::carve(*this, p, counter, nullptr);
    p.workspace_bytes = counter.bytes();
    *plan = std::move(p);
    return {};
}

void TransformerEncoderLayer::forward_steps(const EncoderLayerPlan& plan, const float* src,
                                            const EncoderLayerMasks& masks, float* output, const Scratch& w) const {
    const std::size_t R = plan.rows, E = config_.d_model, F = config_.dim_feedforward;
    const double eps = config_.layer_norm_eps;
    const bool drop = plan.training && config_.dropout > 0.0;
    const unsigned threads = plan.threads;
    const detail::Products products{plan.kernel_set, threads, w.linear};
    auto dropout = [&](std::uint64_t site, float* x, std::size_t n) {
        if (drop) detail::dropout_in_place(plan.seed + site, config_.dropout, x, n, threads);
    };
    // Self-attention block.   (R, E)
    const float* attn_in = src;
    if (config_.norm_first) {
        detail::layer_norm_rows(src, R, E, own("norm1.weight"), own("norm1.bias"), eps, w.attn_in, threads);
        attn_in = w.attn_in;
    }
    self_attn_->run_forward(plan.attention, attn_in, attn_in, attn_in, attention_masks(masks), w.attn, nullptr, w.mha);
    dropout(1, w.attn, R * E);
    detail::add(src, w.attn, R * E, w.h1);
    // Feed-forward block.   (R, E) -> (R, F) -> (R, E)
    const float* norm_w = own(config_.norm_first ? "norm2.weight" : "norm1.weight");
    const float* norm_b = own(config_.norm_first ? "norm2.bias" : "norm1.bias");
    detail::layer_norm_rows(w.h1, R, E, norm_w, norm_b, eps, w.ff_in, threads);
    products.forward(R, E, F, w.ff_in, own("linear1.weight"), own("linear1.bias"), w.f);
    detail::activation_forward(config_.activation, w.f, R * F, w.g, threads);
    dropout(2, w.g, R * F);
    products.forward(R, F, E, w.g, own("linear2.weight"), own("linear2.bias"), w.z);
    dropout(3, w.z, R * E);
    if (config_.norm_first) {
        detail::add(w.h1, w.z, R * E, output);  // x + ff(norm2(x))
    } else {
        detail::add(w.ff_in, w.z, R * E, w.h2);  // norm2(x + ff(x))
        detail::layer_norm_rows(w.h2, R, E, own("norm2.weight"), own("norm2.bias"), eps, output, threads);
    }
}

void TransformerEncoderLayer::run_forward(const EncoderLayerPlan& plan, const float* src,
                                          const EncoderLayerMasks& masks, float* output, void* workspace) const {
    if (plan.rows == 0) return;
    Scratch w{};
    Carver carver(workspace);
    Scratch::carve(*this, plan, carver, &w);
    forward_steps(plan, src, masks, output, w);
}

namespace {

Shape shape_of(const xt::xarray<float>& a) { return Shape(a.shape().begin(), a.shape().end()); }

}  // namespace

xt::xarray<float> TransformerEncoderLayer::forward(const xt::xarray<float>& src, const EncoderLayerOptions& o) const {
    const EncoderLayerMasks masks{o.src_mask.ref(), o.src_key_padding_mask.ref()};
    EncoderLayerPlan plan;
    if (Status st = plan_forward(shape_of(src), masks.src_mask.kind, masks.src_mask.shape,
                                 masks.src_key_padding_mask.kind, masks.src_key_padding_mask.shape, o, &plan);
        !st.ok())
        throw std::invalid_argument(st.message());
    xt::xarray<float> output = xt::xarray<float>::from_shape(plan.output_shape);
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_forward(plan, src.data(), masks, output.data(), workspace.data());
    return output;
}

}  // namespace xattn
