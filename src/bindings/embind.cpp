// The WebAssembly surface of xattn: every call is prepare(op), then, when it has inputs to copy in, execute()
// (bindings/call_record.hpp says what crosses; js/boundary.js drives it).
//
// prepare checks the request and plans it without allocating anything large, then places every buffer of the
// call (inputs, outputs, the run's scratch) in one block: the block an earlier call left, when it is large
// enough, else a new one. It refuses with a message id and what fills it (xattn::Status, written to the error
// record) rather than text: JavaScript prints the refusal with its own argument names. A refusal allocates and
// changes nothing. execute runs what prepare planned; it allocates nothing, so it cannot fail for memory.
//
// No C++ exception may cross into JavaScript (see the toolchain notes): every refusal is a Status.
#include <emscripten/bind.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "bindings/record_io.hpp"
#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"
#include "xattn/xattn.hpp"

#ifdef XATTN_TESTING
#include <malloc.h>

#include "kernels/parallel.hpp"
#endif

namespace xattn::bindings {
namespace {

// What prepare returns, and execute.
enum Outcome { kOk = 0, kRefused = 1, kNothingPrepared = 2 };

// The largest block a call may use: all of a 32-bit WebAssembly memory.
constexpr std::uint64_t kMaxBlock = std::uint64_t{1} << 31;

double memory_bytes() { return static_cast<double>(__builtin_wasm_memory_size(0)) * 65536.0; }

// The block calls run in, kept between calls: a call reuses it when it is large enough, so calls of one size
// allocate once. Modules and caches are created after it is released, so that they can take its place.
class Block {
public:
    unsigned char* get(std::uint64_t bytes) {
        if (bytes <= size_ && data_) return data_;
        release();
        if (bytes > kMaxBlock) return nullptr;
        data_ = static_cast<unsigned char*>(std::malloc(static_cast<std::size_t>(bytes)));
        size_ = data_ ? bytes : 0;
        return data_;
    }
    void release() {
        std::free(data_);
        data_ = nullptr;
        size_ = 0;
    }

private:
    unsigned char* data_ = nullptr;
    std::uint64_t size_ = 0;
};
Block block;

// What an encoder layer's forward with `save` kept for one backward: src, the masks and the parameters it ran
// with, and the backward plan's workspace holding the activations, in one buffer of its own, until that backward
// (or destroy(handle)) frees it.
struct SavedForward {
    struct Free {
        void operator()(unsigned char* p) const { std::free(p); }
    };
    int layer = 0;
    EncoderLayerPlan plan;  // a backward plan
    bool is_causal = false;
    MaskKind mask = MaskKind::none, kpm = MaskKind::none;
    Shape mask_shape, kpm_shape;
    std::unique_ptr<unsigned char, Free> buffer;
    Reply at;              // input, attn_mask, key_padding_mask, output: where they are in the buffer
    double parameters = 0;  // the parameters' copy, in the buffer
    double workspace = 0;
    bool ready = false;  // its forward ran
};

// Modules, caches and kept forwards under integer handles; JS holds the handle.
using Object = std::variant<std::unique_ptr<MultiheadAttention>, std::unique_ptr<KvCache>,
                            std::unique_ptr<TransformerEncoderLayer>, std::unique_ptr<SavedForward>>;
std::map<int, Object> objects;
int next_handle = 1;

template <class T>
T* find(double handle) {
    const auto it = objects.find(static_cast<int>(handle));
    if (it == objects.end()) return nullptr;
    auto* held = std::get_if<std::unique_ptr<T>>(&it->second);
    return held ? held->get() : nullptr;
}

// A mask for the run: its shape was checked by the plan.
MaskRef mask_at(MaskKind kind, const unsigned char* at) {
    MaskRef m;
    m.kind = kind;
    if (kind == MaskKind::boolean) m.bools = at;
    if (kind == MaskKind::additive) m.values = reinterpret_cast<const float*>(at);
    return m;
}
std::uint64_t mask_bytes(MaskKind kind) { return kind == MaskKind::boolean ? 1 : 4; }
MaskKind mask_kind(double k) { return static_cast<MaskKind>(static_cast<int>(k)); }

// Places a call's buffers in one block: first counting (to size the block), then for real.
class Placer {
public:
    explicit Placer(unsigned char* base) : carver_(base) {}
    // `bytes` for one buffer; its address (0 while counting).
    double take(std::uint64_t bytes) {
        return static_cast<double>(reinterpret_cast<std::uintptr_t>(carver_.take<unsigned char>(bytes)));
    }
    std::uint64_t bytes() const { return carver_.bytes(); }

private:
    Carver carver_;
};

// Sizes and places a call: `place(Placer&, Reply&)` takes every buffer, in the same order both times, in the
// memory `allocate(bytes)` returns (null when it cannot).
template <class Place, class Allocate>
Status placed_in(Function fn, Reply* reply, const Place& place, const Allocate& allocate) {
    Placer counting(nullptr);
    Reply ignored;
    place(counting, ignored);
    const std::uint64_t bytes = counting.bytes();
    unsigned char* base = bytes > kMaxBlock ? nullptr : allocate(bytes);
    if (!base)
        return Status::fail(fn, Message::call_too_large, {}, {static_cast<double>(bytes), memory_bytes(), static_cast<double>(kMaxBlock)});
    Placer real(base);
    place(real, *reply);
    return {};
}
// The same in the shared block, where every call but a saving forward runs.
template <class Place>
Status placed(Function fn, Reply* reply, const Place& place) {
    return placed_in(fn, reply, place, [](std::uint64_t bytes) { return block.get(bytes); });
}

// The tensors of an attention call, in one order: query, key and value; with `backward` the output's gradient;
// the output, the weights (when `weights` is given), and with `backward` the inputs' gradients. `e` bytes an
// element: float32, or IEEE halves with float16 I/O.
void place_tensors(Placer& b, Reply& at, const Shape& q, const Shape& k, const Shape& v, const Shape& output,
                   const Shape* weights, bool backward, std::uint64_t e = 4) {
    at.query = b.take(e * numel(q)), at.key = b.take(e * numel(k)), at.value = b.take(e * numel(v));
    if (backward) at.grad_output = b.take(e * numel(output));
    at.output = b.take(e * numel(output));
    if (weights) at.weights = b.take(e * numel(*weights));
    if (backward) at.grad_query = b.take(e * numel(q)), at.grad_key = b.take(e * numel(k)), at.grad_value = b.take(e * numel(v));
}

// A placed call becomes the prepared one, and its reply the record's.
template <class Run>
void keep(Run&& run, const Shape& output, const Shape& weights, Reply* reply);

float* f32(double address) { return reinterpret_cast<float*>(static_cast<std::uintptr_t>(address)); }
std::uint16_t* f16(double address) { return reinterpret_cast<std::uint16_t*>(static_cast<std::uintptr_t>(address)); }
const unsigned char* bytes_at(double address) {
    return reinterpret_cast<const unsigned char*>(static_cast<std::uintptr_t>(address));
}
void* workspace_at(double address) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)); }

// The prepared calls, each with its plan and where its buffers are.
struct SdpaRun {
    SdpaPlan plan;
    MaskKind mask = MaskKind::none;
    Reply at;
    double workspace = 0;
    bool backward = false;
};
struct RotaryRun {
    RotaryPlan plan;
    Reply at;
    bool backward = false, half = false;
};
struct MhaRun {
    MhaPlan plan;
    int module = 0;
    MaskKind kpm = MaskKind::none, attn = MaskKind::none;
    Reply at;
    double workspace = 0;
};
struct KvAppendRun {
    int cache = 0;
    Shape key, value;
    std::vector<std::int32_t> counts;  // per element, or empty: all n
    bool half = false;
    Reply at;
};
struct KvAttendRun {
    KvAttendPlan plan;
    int cache = 0;
    MaskKind mask = MaskKind::none;
    Reply at;
    double workspace = 0;
};
struct LinearRun {
    LinearPlan plan;
    Reply at;
    double workspace = 0;
};
struct LayerNormRun {
    LayerNormPlan plan;
    Reply at;
    double workspace = 0;
};
struct EncoderRun {
    EncoderLayerPlan plan;
    int module = 0;
    MaskKind mask = MaskKind::none, kpm = MaskKind::none;
    Reply at;
    double workspace = 0;
    int save = 0;   // a forward that keeps its activations: the SavedForward it runs in
    int saved = 0;  // a backward from a kept forward: that SavedForward
};
std::variant<std::monostate, SdpaRun, MhaRun, KvAppendRun, KvAttendRun, RotaryRun, LinearRun, LayerNormRun, EncoderRun> prepared;

// Bytes of one element of a call's tensors: float32, or IEEE halves with float16 I/O.
std::uint64_t element_bytes(bool half) { return half ? 2 : 4; }

template <class Run>
void keep(Run&& run, const Shape& output, const Shape& weights, Reply* reply) {
    run.at.output_shape = WireShape::of(output);
    run.at.weights_shape = WireShape::of(weights);
    *reply = run.at;
    prepared = std::forward<Run>(run);
}

SdpaSettings settings_of(const sdpa_request& r) {
    SdpaSettings s;
    s.is_causal = r.is_causal;
    s.causal_alignment = r.bottom_right ? CausalAlignment::bottom_right : CausalAlignment::top_left;
    if (r.has_scale) s.scale = r.scale;
    s.dropout_p = r.dropout_p;
    s.seed = static_cast<std::uint64_t>(r.seed);  // JS checked an integer in [0, 2^53)
    s.enable_gqa = r.enable_gqa;
    s.need_weights = r.need_weights;
    s.softcap = r.softcap;
    s.window = {static_cast<std::int64_t>(r.window_left), static_cast<std::int64_t>(r.window_right)};  // JS checked integers
    s.alibi_slopes = r.alibi_slopes.as<float>();
    s.key_lengths = r.key_lengths.as<std::int32_t>();
    s.return_scores = static_cast<ScoresStage>(static_cast<int>(r.return_scores));  // JS checked 0 … 3
    s.float16_io = r.float16;
    return s;
}

// scaledDotProductAttention, and its gradient (which returns the forward's weights from the same run).
Status prepare_sdpa(const sdpa_request& r, const WireShape* grad_output, Reply* reply) {
    const Shape q = r.query.shape(), k = r.key.shape(), v = r.value.shape(), m = r.attn_mask.shape();
    SdpaRun run;
    run.mask = mask_kind(r.mask_kind);
    run.backward = grad_output != nullptr;
    const Status st = run.backward
                          ? plan_sdpa_backward(q, k, v, grad_output->shape(), run.mask, m, settings_of(r), &run.plan)
                          : plan_sdpa(q, k, v, run.mask, m, settings_of(r), &run.plan);
    if (!st.ok()) return st;
    const SdpaPlan& p = run.plan;
    const Function fn = run.backward ? Function::sdpa_backward : Function::sdpa;
    const std::uint64_t e = element_bytes(p.float16_io);
    if (Status placing = placed(fn, &run.at, [&](Placer& b, Reply& at) {
            place_tensors(b, at, q, k, v, p.output_shape, p.need_weights ? &p.weights_shape : nullptr, run.backward, e);
            if (run.mask != MaskKind::none) at.attn_mask = b.take(mask_bytes(run.mask) * numel(m));
            if (!run.backward && p.return_scores != ScoresStage::none) at.scores = b.take(e * numel(p.weights_shape));
            run.workspace = b.take(p.workspace_bytes);
        });
        !placing.ok())
        return placing;
    keep(std::move(run), p.output_shape, p.weights_shape, reply);
    return {};
}

void execute_sdpa(const SdpaRun& r) {
    const Reply& a = r.at;
    const MaskRef mask = mask_at(r.mask, bytes_at(a.attn_mask));
    void* workspace = workspace_at(r.workspace);
    const bool weights = r.plan.need_weights, scores = !r.backward && r.plan.return_scores != ScoresStage::none;
    if (r.plan.float16_io) {
        if (r.backward)
            run_sdpa_backward(r.plan, f16(a.query), f16(a.key), f16(a.value), mask, f16(a.grad_output), f16(a.output),
                              f16(a.grad_query), f16(a.grad_key), f16(a.grad_value), weights ? f16(a.weights) : nullptr,
                              workspace);
        else
            run_sdpa(r.plan, f16(a.query), f16(a.key), f16(a.value), mask, f16(a.output), weights ? f16(a.weights) : nullptr,
                     workspace, scores ? f16(a.scores) : nullptr);
    } else if (r.backward) {
        run_sdpa_backward(r.plan, f32(a.query), f32(a.key), f32(a.value), mask, f32(a.grad_output), f32(a.output),
                          f32(a.grad_query), f32(a.grad_key), f32(a.grad_value), weights ? f32(a.weights) : nullptr,
                          workspace);
    } else {
        run_sdpa(r.plan, f32(a.query), f32(a.key), f32(a.value), mask, f32(a.output), weights ? f32(a.weights) : nullptr,
                 workspace, scores ? f32(a.scores) : nullptr);
    }
}

// applyRotaryEmbedding and its gradient: x (…, L, D) turned by the rows' positions (given, or an offset).
Status prepare_rotary(const rotary_request& r, Reply* reply) {
    RotaryRun run;
    run.backward = r.backward, run.half = r.float16;
    const Shape x = r.x.shape(), positions = r.positions.shape();
    RotarySettings s;
    s.base = r.base;
    s.rotary_dim = static_cast<std::size_t>(r.rotary_dim);  // JS checked integers in range
    s.interleaved = r.interleaved;
    s.position_offset = static_cast<std::int64_t>(r.position_offset);
    // Their values come with the inputs (execute checks them); no positions is a shape of rank 0, not of one value.
    s.positions.assign(positions.empty() ? 0 : numel(positions), 0);
    if (Status st = plan_rotary(x, s, &run.plan); !st.ok()) return st;
    const std::uint64_t e = element_bytes(run.half);
    if (Status placing = placed(Function::rotary, &run.at, [&](Placer& b, Reply& at) {
            at.x = b.take(e * numel(x));
            if (!s.positions.empty()) at.positions = b.take(4 * s.positions.size());
            at.output = b.take(e * numel(x));
        });
        !placing.ok())
        return placing;
    keep(std::move(run), x, {}, reply);
    return {};
}

int execute_rotary(RotaryRun& r) {
    // The positions, int32 as JS wrote them, into the plan's own (sized when it was made: nothing allocated).
    const auto* given = reinterpret_cast<const std::int32_t*>(bytes_at(r.at.positions));
    for (std::size_t i = 0; i < r.plan.positions.size(); ++i) {
        if (given[i] < 0) {
            write_error(Status::fail(Function::rotary, Message::position_range, {Argument::positions},
                                     {static_cast<double>(i), static_cast<double>(given[i])}));
            return kRefused;
        }
        r.plan.positions[i] = given[i];
    }
    if (r.half) {
        if (r.backward) run_rotary_backward(r.plan, f16(r.at.x), f16(r.at.output));
        else run_rotary(r.plan, f16(r.at.x), f16(r.at.output));
    } else {
        if (r.backward) run_rotary_backward(r.plan, f32(r.at.x), f32(r.at.output));
        else run_rotary(r.plan, f32(r.at.x), f32(r.at.output));
    }
    return kOk;
}

// A created module's reply: its handle, its parameters, their table.
void reply_module(int handle, MultiheadAttention& m, Reply* reply) {
    reply->handle = handle;
    reply->data = static_cast<double>(reinterpret_cast<std::uintptr_t>(m.parameter_data()));
    reply->floats = static_cast<double>(m.parameter_floats());
}

Status prepare_mha_create(const mha_create_request& r, Reply* reply) {
    MhaConfig c;
    c.embed_dim = static_cast<std::size_t>(r.embed_dim);  // JS checked integers in range
    c.num_heads = static_cast<std::size_t>(r.num_heads);
    c.kdim = static_cast<std::size_t>(r.kdim);
    c.vdim = static_cast<std::size_t>(r.vdim);
    c.bias = r.bias, c.batch_first = r.batch_first, c.add_bias_kv = r.add_bias_kv, c.add_zero_attn = r.add_zero_attn;
    c.init_seed = static_cast<std::uint64_t>(r.init_seed);
    c.dropout = r.dropout;
    if (Status st = MultiheadAttention::check_config(c); !st.ok()) return st;
    block.release();  // a module may take the block's place
    std::unique_ptr<MultiheadAttention> m;
    if (Status st = MultiheadAttention::create(c, &m); !st.ok()) return st;
    const int handle = next_handle++;
    reply_module(handle, *m, reply);
    objects.emplace(handle, std::move(m));
    return {};
}

Status prepare_mha(const mha_forward_request& r, const WireShape* grad_output, Reply* reply) {
    const Function fn = grad_output ? Function::mha_backward : Function::mha_forward;
    MultiheadAttention* m = find<MultiheadAttention>(r.module);
    if (!m) return Status::fail(fn, Message::object_disposed);
    const Shape q = r.query.shape(), k = r.key.shape(), v = r.value.shape();
    const Shape kpm = r.key_padding_mask.shape(), am = r.attn_mask.shape();
    MhaRun run;
    run.module = static_cast<int>(r.module);
    run.kpm = mask_kind(r.kpm_kind), run.attn = mask_kind(r.attn_kind);
    MhaSettings s;
    s.need_weights = r.need_weights, s.average_attn_weights = r.average_attn_weights;
    s.is_causal = r.is_causal, s.training = r.training;
    s.seed = static_cast<std::uint64_t>(r.seed);
    s.causal_alignment = r.bottom_right ? CausalAlignment::bottom_right : CausalAlignment::top_left;
    s.softcap = r.softcap;
    s.window = {static_cast<std::int64_t>(r.window_left), static_cast<std::int64_t>(r.window_right)};
    s.alibi_slopes = r.alibi_slopes.as<float>();
    s.key_lengths = r.key_lengths.as<std::int32_t>();
    const Status st = grad_output ? m->plan_backward(q, k, v, grad_output->shape(), run.kpm, kpm, run.attn, am, s, &run.plan)
                                  : m->plan_forward(q, k, v, run.kpm, kpm, run.attn, am, s, &run.plan);
    if (!st.ok()) return st;
    const MhaPlan& p = run.plan;
    if (Status placing = placed(fn, &run.at, [&](Placer& b, Reply& at) {
            place_tensors(b, at, q, k, v, p.output_shape, p.need_weights ? &p.weights_shape : nullptr, p.backward);
            if (run.kpm != MaskKind::none) at.key_padding_mask = b.take(mask_bytes(run.kpm) * numel(kpm));
            if (run.attn != MaskKind::none) at.attn_mask = b.take(mask_bytes(run.attn) * numel(am));
            if (p.backward) at.grad_parameters = b.take(4 * std::uint64_t{m->parameter_floats()});
            run.workspace = b.take(p.workspace_bytes);
        });
        !placing.ok())
        return placing;
    keep(std::move(run), p.output_shape, p.weights_shape, reply);
    return {};
}

int execute_mha(const MhaRun& r) {
    const MultiheadAttention* m = find<MultiheadAttention>(r.module);
    if (!m) return kNothingPrepared;
    const Reply& a = r.at;
    const MhaMasks masks{mask_at(r.kpm, bytes_at(a.key_padding_mask)), mask_at(r.attn, bytes_at(a.attn_mask))};
    if (r.plan.backward)
        m->run_backward(r.plan, f32(a.query), f32(a.key), f32(a.value), masks, f32(a.grad_output), f32(a.output),
                        f32(a.grad_query), f32(a.grad_key), f32(a.grad_value), f32(a.grad_parameters),
                        workspace_at(r.workspace));
    else
        m->run_forward(r.plan, f32(a.query), f32(a.key), f32(a.value), masks, f32(a.output),
                       r.plan.need_weights ? f32(a.weights) : nullptr, workspace_at(r.workspace));
    return kOk;
}

// linear (F.linear) and its gradient; the backward reads no bias (has_bias only asks for grad_bias).
Status prepare_linear(const linear_request& r, const WireShape* grad_output, Reply* reply) {
    const Shape x = r.input.shape(), w = r.weight.shape(), b = r.bias.shape();
    LinearRun run;
    const bool backward = grad_output != nullptr;
    const Status st = backward ? plan_linear_backward(x, w, r.has_bias ? &b : nullptr, grad_output->shape(), &run.plan)
                               : plan_linear(x, w, r.has_bias ? &b : nullptr, &run.plan);
    if (!st.ok()) return st;
    const LinearPlan& p = run.plan;
    if (Status placing = placed(backward ? Function::linear_backward : Function::linear, &run.at, [&](Placer& a, Reply& at) {
            at.input = a.take(4 * numel(x)), at.weight = a.take(4 * numel(w));
            if (backward) {
                at.grad_output = a.take(4 * numel(p.output_shape));
                at.grad_input = a.take(4 * numel(x)), at.grad_weight = a.take(4 * numel(w));
                if (p.has_bias) at.grad_bias = a.take(4 * std::uint64_t{p.out});
            } else {
                if (p.has_bias) at.bias = a.take(4 * numel(b));
                at.output = a.take(4 * numel(p.output_shape));
            }
            run.workspace = a.take(p.workspace_bytes);
        });
        !placing.ok())
        return placing;
    keep(std::move(run), p.output_shape, {}, reply);
    return {};
}

void execute_linear(const LinearRun& r) {
    const Reply& a = r.at;
    if (r.plan.backward)
        run_linear_backward(r.plan, f32(a.input), f32(a.weight), f32(a.grad_output), f32(a.grad_input),
                            f32(a.grad_weight), f32(a.grad_bias), workspace_at(r.workspace));
    else
        run_linear(r.plan, f32(a.input), f32(a.weight), f32(a.bias), f32(a.output), workspace_at(r.workspace));
}

// layer_norm (F.layer_norm) and its gradient; the backward reads the weight (not the bias).
Status prepare_layer_norm(const layer_norm_request& r, const WireShape* grad_output, Reply* reply) {
    const Shape x = r.input.shape(), ns = r.normalized_shape.shape();
    LayerNormRun run;
    const bool backward = grad_output != nullptr;
    const Status st = backward ? plan_layer_norm_backward(x, ns, r.has_weight ? &ns : nullptr, r.has_bias ? &ns : nullptr,
                                                          r.eps, grad_output->shape(), &run.plan)
                               : plan_layer_norm(x, ns, r.has_weight ? &ns : nullptr, r.has_bias ? &ns : nullptr, r.eps,
                                                 &run.plan);
    if (!st.ok()) return st;
    const LayerNormPlan& p = run.plan;
    const Function fn = backward ? Function::layer_norm_backward : Function::layer_norm;
    if (Status placing = placed(fn, &run.at, [&](Placer& a, Reply& at) {
            at.input = a.take(4 * numel(x));
            if (p.has_weight) at.weight = a.take(4 * std::uint64_t{p.size});
            if (backward) {
                at.grad_output = a.take(4 * numel(x)), at.grad_input = a.take(4 * numel(x));
                if (p.has_weight) at.grad_weight = a.take(4 * std::uint64_t{p.size});
                if (p.has_bias) at.grad_bias = a.take(4 * std::uint64_t{p.size});
            } else {
                if (p.has_bias) at.bias = a.take(4 * std::uint64_t{p.size});
                at.output = a.take(4 * numel(x));
            }
            run.workspace = a.take(p.workspace_bytes);
        });
        !placing.ok())
        return placing;
    keep(std::move(run), x, {}, reply);
    return {};
}

void execute_layer_norm(const LayerNormRun& r) {
    const Reply& a = r.at;
    if (r.plan.backward)
        run_layer_norm_backward(r.plan, f32(a.input), f32(a.weight), f32(a.grad_output), f32(a.grad_input),
                                f32(a.grad_weight), f32(a.grad_bias), workspace_at(r.workspace));
    else
        run_layer_norm(r.plan, f32(a.input), f32(a.weight), f32(a.bias), f32(a.output), workspace_at(r.workspace));
}

Status prepare_encoder_create(const encoder_create_request& r, Reply* reply) {
    EncoderLayerConfig c;
    c.d_model = static_cast<std::size_t>(r.d_model);  // JS checked integers in range
    c.nhead = static_cast<std::size_t>(r.nhead);
    c.dim_feedforward = static_cast<std::size_t>(r.dim_feedforward);
    c.dropout = r.dropout;
    c.activation = r.gelu ? Activation::gelu : Activation::relu;
    c.layer_norm_eps = r.layer_norm_eps;
    c.batch_first = r.batch_first, c.norm_first = r.norm_first;
    c.init_seed = static_cast<std::uint64_t>(r.init_seed);
    if (Status st = TransformerEncoderLayer::check_config(c); !st.ok()) return st;
    block.release();  // a layer may take the block's place
    std::unique_ptr<TransformerEncoderLayer> layer;
    if (Status st = TransformerEncoderLayer::create(c, &layer); !st.ok()) return st;
    const int handle = next_handle++;
    reply->handle = handle;
    reply->data = static_cast<double>(reinterpret_cast<std::uintptr_t>(layer->self_attn_data()));
    reply->floats = static_cast<double>(layer->parameter_floats());
    reply->rest_from = static_cast<double>(layer->self_attn().parameter_floats());
    reply->rest_data = static_cast<double>(reinterpret_cast<std::uintptr_t>(layer->rest_data()));
    objects.emplace(handle, std::move(layer));
    return {};
}

// Where an encoder call's tensors go: src, the masks, with a backward grad_output; the output; with a backward
// grad_src and the parameters' gradients.
void place_encoder(Placer& a, Reply& at, const TransformerEncoderLayer& m, const EncoderRun& run, const Shape& src,
                   const Shape& am, const Shape& kpm, bool backward) {
    at.input = a.take(4 * numel(src));
    if (run.mask != MaskKind::none) at.attn_mask = a.take(mask_bytes(run.mask) * numel(am));
    if (run.kpm != MaskKind::none) at.key_padding_mask = a.take(mask_bytes(run.kpm) * numel(kpm));
    if (backward) at.grad_output = a.take(4 * numel(src));
    at.output = a.take(4 * numel(src));
    if (backward) {
        at.grad_input = a.take(4 * numel(src));
        at.grad_parameters = a.take(4 * std::uint64_t{m.parameter_floats()});
    }
}

// A forward that keeps its activations runs in a buffer of its own (a SavedForward), not in the shared block.
Status prepare_saving_forward(const TransformerEncoderLayer& m, EncoderRun& run, const Shape& src, const Shape& am,
                              const Shape& kpm, bool is_causal) {
    auto saved = std::make_unique<SavedForward>();
    saved->layer = run.module, saved->plan = run.plan, saved->is_causal = is_causal;
    saved->mask = run.mask, saved->kpm = run.kpm, saved->mask_shape = am, saved->kpm_shape = kpm;
    const auto place = [&](Placer& a, Reply& at) {
        place_encoder(a, at, m, run, src, am, kpm, false);
        saved->parameters = a.take(4 * std::uint64_t{m.parameter_floats()});
        saved->workspace = a.take(run.plan.workspace_bytes);
    };
    const auto allocate = [&](std::uint64_t bytes) {
        saved->buffer.reset(static_cast<unsigned char*>(std::malloc(static_cast<std::size_t>(bytes))));
        return saved->buffer.get();
    };
    if (Status placing = placed_in(Function::encoder_forward, &saved->at, place, allocate); !placing.ok()) return placing;
    run.at = saved->at;
    run.workspace = saved->workspace;
    run.save = next_handle++;
    objects.emplace(run.save, std::move(saved));
    run.at.handle = run.save;
    return {};
}

// Why a kept forward cannot serve this backward: gone, another layer's, or planned with other arguments.
Status check_saved(const SavedForward* s, const EncoderRun& run, const Shape& src, const Shape& am, const Shape& kpm,
                   bool is_causal) {
    constexpr Function fn = Function::encoder_backward;
    if (!s || !s->ready) return Status::fail(fn, Message::encoder_saved_gone, {Argument::saved});
    if (s->layer != run.module) return Status::fail(fn, Message::encoder_saved_other_layer, {Argument::saved});
    const EncoderLayerPlan& p = s->plan;
    const Argument differs = p.output_shape != src                               ? Argument::src
                             : s->mask != run.mask || s->mask_shape != am        ? Argument::src_mask
                             : s->kpm != run.kpm || s->kpm_shape != kpm          ? Argument::src_key_padding_mask
                             : s->is_causal != is_causal                         ? Argument::is_causal
                             : p.training != run.plan.training                   ? Argument::training
                             : p.seed != run.plan.seed                           ? Argument::seed
                                                                                 : Argument::none;
    if (differs != Argument::none) return Status::fail(fn, Message::encoder_saved_differs, {Argument::saved, differs});
    return {};
}

Status prepare_encoder(const encoder_forward_request& r, const WireShape* grad_output, double saved, Reply* reply) {
    const Function fn = grad_output ? Function::encoder_backward : Function::encoder_forward;
    TransformerEncoderLayer* m = find<TransformerEncoderLayer>(r.module);
    if (!m) return Status::fail(fn, Message::object_disposed);
    const Shape src = r.src.shape(), am = r.src_mask.shape(), kpm = r.src_key_padding_mask.shape();
    EncoderRun run;
    run.module = static_cast<int>(r.module);
    run.mask = mask_kind(r.mask_kind), run.kpm = mask_kind(r.kpm_kind);
    EncoderLayerSettings s;
    s.is_causal = r.is_causal, s.training = r.training;
    s.seed = static_cast<std::uint64_t>(r.seed);
    const bool save = !grad_output && r.save;  // a saving forward is planned as the backward it serves
    const Status st = grad_output || save
                          ? m->plan_backward(src, grad_output ? grad_output->shape() : src, run.mask, am, run.kpm, kpm, s,
                                             &run.plan)
                          : m->plan_forward(src, run.mask, am, run.kpm, kpm, s, &run.plan);
    if (!st.ok()) return Status(st).as(fn);
    if (save) {
        if (Status placing = prepare_saving_forward(*m, run, src, am, kpm, s.is_causal); !placing.ok())
            return placing;
        keep(std::move(run), src, {}, reply);
        return {};
    }
    if (grad_output && saved != 0) {
        run.saved = static_cast<int>(saved);
        if (Status why = check_saved(find<SavedForward>(saved), run, src, am, kpm, s.is_causal); !why.ok()) return why;
    }
    const bool backward = grad_output != nullptr;
    const std::uint64_t workspace = run.saved ? 0 : run.plan.workspace_bytes;  // a kept forward brings its own
    if (Status placing = placed(fn, &run.at, [&](Placer& a, Reply& at) {
            place_encoder(a, at, *m, run, src, am, kpm, backward);
            run.workspace = a.take(workspace);
        });
        !placing.ok())
        return placing;
    keep(std::move(run), src, {}, reply);
    return {};
}

// A backward from a kept forward: src, the masks and the parameters must be what the forward ran with, bit for
// bit (the plan checked the rest); then the kept activations serve it, once.
int execute_saved_backward(const TransformerEncoderLayer& m, const EncoderRun& r) {
    SavedForward* s = find<SavedForward>(r.saved);
    if (!s) return kNothingPrepared;
    const Reply& a = r.at;
    const std::uint64_t floats = numel(r.plan.output_shape);
    auto same = [](double x, double y, std::uint64_t bytes) { return bytes == 0 || std::memcmp(bytes_at(x), bytes_at(y), bytes) == 0; };
    const Argument differs =
        !same(a.input, s->at.input, 4 * floats)                                                      ? Argument::src
        : !same(a.attn_mask, s->at.attn_mask, r.mask == MaskKind::none ? 0 : mask_bytes(r.mask) * numel(s->mask_shape)) ? Argument::src_mask
        : !same(a.key_padding_mask, s->at.key_padding_mask, r.kpm == MaskKind::none ? 0 : mask_bytes(r.kpm) * numel(s->kpm_shape)) ? Argument::src_key_padding_mask
        : !m.parameters_equal(f32(s->parameters))                                                    ? Argument::parameters
                                                                                                     : Argument::none;
    if (differs != Argument::none) {
        write_error(Status::fail(Function::encoder_backward, Message::encoder_saved_differs, {Argument::saved, differs}));
        return kRefused;
    }
    std::copy_n(f32(s->at.output), floats, f32(a.output));
    const EncoderLayerMasks masks{mask_at(s->mask, bytes_at(s->at.attn_mask)), mask_at(s->kpm, bytes_at(s->at.key_padding_mask))};
    m.run_backward_saved(s->plan, f32(s->at.input), masks, f32(a.grad_output), f32(a.grad_input),
                         f32(a.grad_parameters), workspace_at(s->workspace));
    objects.erase(r.saved);  // one backward: its buffer goes now
    return kOk;
}

int execute_encoder(const EncoderRun& r) {
    const TransformerEncoderLayer* m = find<TransformerEncoderLayer>(r.module);
    if (!m) return kNothingPrepared;
    if (r.saved) return execute_saved_backward(*m, r);
    const Reply& a = r.at;
    const EncoderLayerMasks masks{mask_at(r.mask, bytes_at(a.attn_mask)), mask_at(r.kpm, bytes_at(a.key_padding_mask))};
    if (r.save) {
        SavedForward* s = find<SavedForward>(r.save);
        if (!s) return kNothingPrepared;
        m->get_parameters(f32(s->parameters));
        m->run_forward_saving(r.plan, f32(a.input), masks, f32(a.output), workspace_at(r.workspace));
        s->ready = true;
    } else if (r.plan.backward) {
        m->run_backward(r.plan, f32(a.input), masks, f32(a.grad_output), f32(a.output), f32(a.grad_input),
                        f32(a.grad_parameters), workspace_at(r.workspace));
    } else {
        m->run_forward(r.plan, f32(a.input), masks, f32(a.output), workspace_at(r.workspace));
    }
    return kOk;
}

Status prepare_kv_create(const kv_create_request& r, Reply* reply) {
    KvCacheConfig c;
    c.batch = static_cast<std::size_t>(r.batch);  // JS checked integers in range
    c.kv_heads = static_cast<std::size_t>(r.kv_heads);
    c.head_dim = static_cast<std::size_t>(r.head_dim);
    c.value_dim = static_cast<std::size_t>(r.value_dim);
    c.capacity = static_cast<std::size_t>(r.capacity);
    c.dtype = r.float16 ? CacheDtype::float16 : CacheDtype::float32;
    c.rolling = r.rolling;
    if (r.rotary) {
        RotaryEmbedding rotary;
        rotary.base = r.rotary_base;
        rotary.rotary_dim = static_cast<std::size_t>(r.rotary_dim);
        rotary.interleaved = r.rotary_interleaved;
        c.rotary = rotary;
    }
    if (Status st = KvCache::check_config(c); !st.ok()) return st;
    block.release();  // the cache may take the block's place
    std::unique_ptr<KvCache> cache;
    if (Status st = KvCache::create(c, &cache); !st.ok()) return st;
    reply->handle = next_handle++;
    objects.emplace(static_cast<int>(reply->handle), std::move(cache));
    return {};
}

Status prepare_kv_append(const kv_append_request& r, Reply* reply) {
    const KvCache* c = find<KvCache>(r.module);
    if (!c) return Status::fail(Function::kv_append, Message::object_disposed);
    KvAppendRun run;
    run.cache = static_cast<int>(r.module);
    run.key = r.key.shape(), run.value = r.value.shape();
    run.counts = r.counts.as<std::int32_t>();
    run.half = r.float16;
    if (!run.counts.empty() && run.counts.size() != c->config().batch)
        return Status::fail(Function::kv_append, Message::per_element_count_b, {Argument::counts},
                            {static_cast<double>(run.counts.size()), static_cast<double>(c->config().batch)});
    if (Status st = c->check_append(run.key, run.value, run.counts.empty() ? nullptr : run.counts.data()); !st.ok())
        return st;
    const std::uint64_t e = element_bytes(run.half);
    if (Status placing = placed(Function::kv_append, &run.at, [&](Placer& b, Reply& at) {
            at.key = b.take(e * numel(run.key)), at.value = b.take(e * numel(run.value));
        });
        !placing.ok())
        return placing;
    *reply = run.at;
    prepared = std::move(run);
    return {};
}

Status prepare_kv_truncate(const kv_truncate_request& r, Reply* reply) {
    KvCache* c = find<KvCache>(r.module);
    if (!c) return Status::fail(Function::kv_truncate, Message::object_disposed);
    const std::vector<std::size_t> lengths = r.lengths.as<std::size_t>();  // per element (JS checked integers)
    const std::size_t B = c->config().batch;
    if (!lengths.empty() && lengths.size() != B)
        return Status::fail(Function::kv_truncate, Message::per_element_count_b, {Argument::lengths},
                            {static_cast<double>(lengths.size()), static_cast<double>(B)});
    if (Status st = lengths.empty() ? c->truncate(static_cast<std::size_t>(r.length)) : c->truncate(lengths.data()); !st.ok())
        return st;
    reply->length = static_cast<double>(c->length());
    return {};
}

// Copies the held keys (or values) into the block, widened to float32: done in prepare, read by JS after it.
Status prepare_kv_read(const kv_read_request& r, Reply* reply) {
    KvCache* c = find<KvCache>(r.module);
    if (!c) return Status::fail(Function::kv_read, Message::object_disposed);
    const KvCacheConfig& cfg = c->config();
    const Shape shape{cfg.batch, cfg.kv_heads, c->length(), r.values ? c->value_dim() : cfg.head_dim};
    if (Status placing = placed(Function::kv_read, reply, [&](Placer& b, Reply& at) { at.output = b.take(4 * numel(shape)); });
        !placing.ok())
        return placing;
    if (r.values) c->copy_values(f32(reply->output));
    else c->copy_keys(f32(reply->output));
    reply->output_shape = WireShape::of(shape);
    reply->length = static_cast<double>(c->length());
    return {};
}

Status prepare_kv_attend(const kv_attend_request& r, Reply* reply) {
    KvCache* c = find<KvCache>(r.module);
    if (!c) return Status::fail(Function::kv_attend, Message::object_disposed);
    const Shape q = r.query.shape(), m = r.attn_mask.shape();
    KvAttendRun run;
    run.cache = static_cast<int>(r.module);
    run.mask = mask_kind(r.mask_kind);
    KvAttendSettings s;
    s.is_causal = r.is_causal;
    if (r.has_scale) s.scale = r.scale;
    s.need_weights = r.need_weights;
    s.softcap = r.softcap;
    s.window = {static_cast<std::int64_t>(r.window_left), static_cast<std::int64_t>(r.window_right)};
    s.alibi_slopes = r.alibi_slopes.as<float>();
    s.float16_io = r.float16;
    if (Status st = c->plan_attend(q, run.mask, m, s, &run.plan); !st.ok()) return st;
    const KvAttendPlan& p = run.plan;
    const std::uint64_t e = element_bytes(p.float16_io);
    if (Status placing = placed(Function::kv_attend, &run.at, [&](Placer& b, Reply& at) {
            at.query = b.take(e * numel(q));
            if (run.mask != MaskKind::none) at.attn_mask = b.take(mask_bytes(run.mask) * numel(m));
            at.output = b.take(e * numel(p.output_shape));
            if (r.need_weights) at.weights = b.take(e * numel(p.weights_shape));
            run.workspace = b.take(p.workspace_bytes);
        });
        !placing.ok())
        return placing;
    keep(std::move(run), p.output_shape, p.weights_shape, reply);
    return {};
}

Status prepare_op(Op op, Reply* reply) {
    switch (op) {
    case Op::sdpa: return prepare_sdpa(read_sdpa(), nullptr, reply);
    // A backward's request is its forward's with grad_output after it (call_record.hpp): read both from the record.
    case Op::sdpa_backward: {
        const WireShape grad_output = read_sdpa_backward().grad_output;
        return prepare_sdpa(read_sdpa(), &grad_output, reply);
    }
    case Op::mha_create: return prepare_mha_create(read_mha_create(), reply);
    case Op::mha_forward: return prepare_mha(read_mha_forward(), nullptr, reply);
    case Op::mha_backward: {
        const WireShape grad_output = read_mha_backward().grad_output;
        return prepare_mha(read_mha_forward(), &grad_output, reply);
    }
    case Op::kv_create: return prepare_kv_create(read_kv_create(), reply);
    case Op::kv_append: return prepare_kv_append(read_kv_append(), reply);
    case Op::kv_truncate: return prepare_kv_truncate(read_kv_truncate(), reply);
    case Op::kv_read: return prepare_kv_read(read_kv_read(), reply);
    case Op::kv_attend: return prepare_kv_attend(read_kv_attend(), reply);
    case Op::rotary: return prepare_rotary(read_rotary(), reply);
    case Op::linear: return prepare_linear(read_linear(), nullptr, reply);
    case Op::linear_backward: {
        const linear_backward_request r = read_linear_backward();
        linear_request forward;
#define XATTN_COPY_FIELD(name, kind) forward.name = r.name;
        XATTN_REQUEST_linear(XATTN_COPY_FIELD)
#undef XATTN_COPY_FIELD
        return prepare_linear(forward, &r.grad_output, reply);
    }
    case Op::layer_norm: return prepare_layer_norm(read_layer_norm(), nullptr, reply);
    case Op::layer_norm_backward: {
        const layer_norm_backward_request r = read_layer_norm_backward();
        layer_norm_request forward;
#define XATTN_COPY_FIELD(name, kind) forward.name = r.name;
        XATTN_REQUEST_layer_norm(XATTN_COPY_FIELD)
#undef XATTN_COPY_FIELD
        return prepare_layer_norm(forward, &r.grad_output, reply);
    }
    case Op::encoder_create: return prepare_encoder_create(read_encoder_create(), reply);
    case Op::encoder_forward: return prepare_encoder(read_encoder_forward(), nullptr, 0, reply);
    case Op::encoder_backward: {
        const encoder_backward_request r = read_encoder_backward();
        encoder_forward_request forward;
#define XATTN_COPY_FIELD(name, kind) forward.name = r.name;
        XATTN_REQUEST_encoder_forward(XATTN_COPY_FIELD)
#undef XATTN_COPY_FIELD
        return prepare_encoder(forward, &r.grad_output, r.saved, reply);
    }
    case Op::count: break;
    }
    return Status::fail(Function::boundary, Message::object_disposed);
}

// Reads op's request from the record and prepares it: kOk with the reply in the record, or kRefused with the
// refusal there. A call prepared before and never executed is dropped.
int prepare(int op) {
    prepared = std::monostate{};
    Reply reply;
    const Status st = op >= 0 && op < static_cast<int>(Op::count) ? prepare_op(static_cast<Op>(op), &reply)
                                                                  : Status::fail(Function::boundary, Message::object_disposed);
    if (!st.ok()) {
        write_error(st);
        return kRefused;
    }
    const std::vector<ParameterInfo>* table = nullptr;  // a created module's
    if (op == static_cast<int>(Op::mha_create)) table = &find<MultiheadAttention>(reply.handle)->parameters();
    if (op == static_cast<int>(Op::encoder_create)) table = &find<TransformerEncoderLayer>(reply.handle)->parameters();
    write_reply(reply, table);
    return kOk;
}

// Runs the prepared call. kNothingPrepared when there is none, or its module or cache was disposed since, or
// the cache changed length (the plan's shapes no longer hold).
int execute() {
    int outcome = kOk;
    std::visit(
        [&](const auto& run) {
            using T = std::decay_t<decltype(run)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                outcome = kNothingPrepared;
            } else if constexpr (std::is_same_v<T, SdpaRun>) {
                execute_sdpa(run);
            } else if constexpr (std::is_same_v<T, MhaRun>) {
                outcome = execute_mha(run);
            } else if constexpr (std::is_same_v<T, LinearRun>) {
                execute_linear(run);
            } else if constexpr (std::is_same_v<T, LayerNormRun>) {
                execute_layer_norm(run);
            } else if constexpr (std::is_same_v<T, EncoderRun>) {
                outcome = execute_encoder(run);
            } else if constexpr (std::is_same_v<T, KvAppendRun>) {
                KvCache* c = find<KvCache>(run.cache);
                if (!c) {
                    outcome = kNothingPrepared;
                    return;
                }
                const std::int32_t* counts = run.counts.empty() ? nullptr : run.counts.data();
                const Status st = run.half ? c->append(run.key, f16(run.at.key), run.value, f16(run.at.value), counts)
                                           : c->append(run.key, f32(run.at.key), run.value, f32(run.at.value), counts);
                if (!st.ok()) {
                    write_error(st);
                    outcome = kRefused;
                }
            } else if constexpr (std::is_same_v<T, KvAttendRun>) {
                const KvCache* c = find<KvCache>(run.cache);
                if (!c || c->length() != run.plan.length) {
                    outcome = kNothingPrepared;
                    return;
                }
                const Reply& a = run.at;
                const MaskRef mask = mask_at(run.mask, bytes_at(a.attn_mask));
                const bool weights = run.plan.sdpa.need_weights;
                if (run.plan.float16_io)
                    c->run_attend(run.plan, f16(a.query), mask, f16(a.output), weights ? f16(a.weights) : nullptr,
                                  workspace_at(run.workspace));
                else
                    c->run_attend(run.plan, f32(a.query), mask, f32(a.output), weights ? f32(a.weights) : nullptr,
                                  workspace_at(run.workspace));
            } else if constexpr (std::is_same_v<T, RotaryRun>) {
                outcome = execute_rotary(const_cast<RotaryRun&>(run));
            }
        },
        prepared);
    prepared = std::monostate{};
    return outcome;
}

// Frees a module or cache; false when the handle holds none.
bool destroy(int handle) { return objects.erase(handle) != 0; }

double cache_length(int handle) {
    const KvCache* c = find<KvCache>(handle);
    return c ? static_cast<double>(c->length()) : -1.0;
}

// Batch element n's positions held (which 0) or appended in all (1: its next position), or -1.
double cache_element(int handle, int n, int which) {
    const KvCache* c = find<KvCache>(handle);
    if (!c || n < 0 || static_cast<std::size_t>(n) >= c->config().batch) return -1.0;
    return static_cast<double>(which == 0 ? c->length(static_cast<std::size_t>(n)) : c->position(static_cast<std::size_t>(n)));
}

std::uintptr_t record_address() { return reinterpret_cast<std::uintptr_t>(record); }
double schema_signature() { return static_cast<double>(signature()); }
std::string version_text() { return xattn::version(); }
// The kernel set every call runs (its instruction set and register blocking; kernels/blocking.cpp).
std::string kernels_name() { return kernels::best_kernels().name; }
// The thread count later plans record (xattn/threads.hpp) and how long helpers poll between calls; the JS
// layer sets both once per instance.
unsigned set_threads(unsigned n) { return set_num_threads(n); }
unsigned set_spin(unsigned us) { return set_spin_microseconds(us); }

#ifdef XATTN_TESTING
// The testing build's extras (scripts/build-wasm.sh, tests/js/testing-build.mjs): bytes malloc holds (the
// block calls reuse, and a call prepared and never executed, dropped first: what stays is what calls leaked), and
// the pool's test settings (kernels/parallel.hpp).
double heap_in_use() {
    block.release();
    prepared = std::monostate{};
    return static_cast<double>(mallinfo().uordblks);
}
void set_min_work_per_worker(double flops) { kernels::set_min_work_per_worker(flops); }
double helper_tasks_run() { return static_cast<double>(kernels::helper_tasks_run()); }
void set_every_worker_takes_part(bool on) { kernels::set_every_worker_takes_part(on); }
bool helpers_asleep(unsigned threads) { return kernels::helpers_asleep(threads); }
#endif

}  // namespace
}  // namespace xattn::bindings

EMSCRIPTEN_BINDINGS(xattn) {
    using namespace xattn::bindings;
    emscripten::function("prepare", &prepare);
    emscripten::function("execute", &execute);
    emscripten::function("destroy", &destroy);
    emscripten::function("cacheLength", &cache_length);
    emscripten::function("cacheElement", &cache_element);
    emscripten::function("record", &record_address);
    emscripten::function("signature", &schema_signature);
    emscripten::function("memoryBytes", &memory_bytes);
    emscripten::function("version", &version_text);
    emscripten::function("kernelsName", &kernels_name);
    emscripten::function("setThreads", &set_threads);
    emscripten::function("maxThreads", &xattn::max_threads);
    emscripten::function("setSpinMicroseconds", &set_spin);
#ifdef XATTN_TESTING
    emscripten::function("heapInUse", &heap_in_use);
    emscripten::function("setMinWorkPerWorker", &set_min_work_per_worker);
    emscripten::function("helperTasksRun", &helper_tasks_run);
    emscripten::function("setEveryWorkerTakesPart", &set_every_worker_takes_part);
    emscripten::function("helpersAsleep", &helpers_asleep);
#endif
}
