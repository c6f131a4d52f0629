// The WebAssembly surface of xattn: one typed call per operation, planned once.
//
// Every operation crosses in two steps (js/boundary.js drives them):
//   1. plan:  JS writes the request (shapes and settings) into the call record, a small array of doubles in
//             this module's memory, and calls the plan. The core validates it without allocating anything
//             large and keeps the plan under a token. The reply, written back into the record, names every
//             buffer of the call by its byte offset in one block, the output shapes, and the block's total
//             size: inputs, outputs and the run's scratch, nothing guessed; the plan returns an error's text,
//             or an empty string.
//   2. run:   JS allocates that block (or refuses the call with a RangeError when it cannot), copies the
//             inputs in, and runs the token on the block. A run allocates nothing, so it cannot fail for
//             memory; it takes and returns plain numbers, so crossing the boundary allocates nothing either.
// No C++ exception may cross into JavaScript (see the toolchain notes): errors come back as text from plan,
// and as a code from run.
#include <emscripten/bind.h>
#include <malloc.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"
#include "xattn/xattn.hpp"

namespace {

using xattn::Carver;
using xattn::MaskKind;
using xattn::Shape;

// Shapes cross as a rank and up to kMaxRank dims (js/validate.js refuses more before any call).
constexpr std::size_t kMaxRank = 16;
struct WireShape {
    int rank = 0;
    std::array<double, kMaxRank> dims{};
};

Shape shape_of(const WireShape& w) {
    Shape s;
    for (int d = 0; d < w.rank && d < static_cast<int>(kMaxRank); ++d) s.push_back(static_cast<std::size_t>(w.dims[d]));
    return s;
}

WireShape wire_of(const Shape& s) {
    WireShape w;
    w.rank = static_cast<int>(s.size());
    for (std::size_t d = 0; d < s.size() && d < kMaxRank; ++d) w.dims[d] = static_cast<double>(s[d]);
    return w;
}

// The call record. An Embind value_object crosses field by field, a JS function call for each, and a plan's
// request and reply are about 150 numbers (a shape is 17 of them): converting them was 29 of the 32 µs that a
// one-row scaledDotProductAttention took end to end. So the requests of the plans and of kvAppend, and every
// plan's reply (Layout), cross as plain doubles in this record instead, which JS reads and writes through a
// Float64Array (js/boundary.js: REQUESTS and readLayout, which list the same fields in the same order). A shape
// takes 1 + kMaxRank slots: its rank, then kMaxRank dims (zeros past the rank). Only the calling thread plans.
constexpr std::size_t kRecordSlots = 128;
alignas(8) double call_record[kRecordSlots];

struct RecordReader {
    const double* at = call_record;
    double number() { return *at++; }
    int integer() { return static_cast<int>(*at++); }
    bool flag() { return *at++ != 0.0; }
    WireShape shape() {
        WireShape w;
        w.rank = integer();
        for (std::size_t d = 0; d < kMaxRank; ++d) w.dims[d] = *at++;
        return w;
    }
};

struct RecordWriter {
    double* at = call_record;
    void number(double x) { *at++ = x; }
    void shape(const WireShape& w) {
        number(w.rank);
        for (std::size_t d = 0; d < kMaxRank; ++d) number(w.dims[d]);
    }
};

std::uintptr_t call_record_address() { return reinterpret_cast<std::uintptr_t>(call_record); }

// scaledDotProductAttention and its gradient. Absent tensors have rank 0 (and kind 0 for the mask).
struct SdpaCall {
    WireShape query, key, value, attn_mask, grad_output;
    int mask_kind = 0;  // 0 none, 1 boolean (non-zero byte = may attend), 2 additive float
    bool is_causal = false, bottom_right = false, has_scale = false, enable_gqa = false, need_weights = false;
    double scale = 0, dropout_p = 0, seed = 0;  // seed: JS checked an integer in [0, 2^53)
};

SdpaCall read_sdpa_call() {
    RecordReader r;
    SdpaCall c;
    c.query = r.shape(), c.key = r.shape(), c.value = r.shape(), c.attn_mask = r.shape(), c.grad_output = r.shape();
    c.mask_kind = r.integer();
    c.is_causal = r.flag(), c.bottom_right = r.flag(), c.has_scale = r.flag();
    c.scale = r.number(), c.dropout_p = r.number(), c.seed = r.number();
    c.enable_gqa = r.flag(), c.need_weights = r.flag();
    return c;
}

// MultiheadAttention.forward and .backward (grad_output: rank 0 for the forward).
struct MhaCall {
    int module = 0;
    WireShape query, key, value, key_padding_mask, attn_mask, grad_output;
    int kpm_kind = 0, attn_kind = 0;
    bool need_weights = true, average_attn_weights = true, is_causal = false, training = false;
    double seed = 0;  // JS checked an integer in [0, 2^53)
};

MhaCall read_mha_call() {
    RecordReader r;
    MhaCall c;
    c.module = r.integer();
    c.query = r.shape(), c.key = r.shape(), c.value = r.shape();
    c.key_padding_mask = r.shape(), c.attn_mask = r.shape(), c.grad_output = r.shape();
    c.kpm_kind = r.integer(), c.attn_kind = r.integer();
    c.need_weights = r.flag(), c.average_attn_weights = r.flag(), c.is_causal = r.flag(), c.training = r.flag();
    c.seed = r.number();
    return c;
}

// The reply to every plan: where each buffer sits in the call's block (bytes from its 64-byte aligned
// start; -1 for a buffer this call does not have), and how big the block must be.
struct Layout {
    std::string error;  // empty when the call may run
    int token = 0;
    double bytes = 0;   // the block, including up to 63 bytes to align its start
    double query = -1, key = -1, value = -1, attn_mask = -1, key_padding_mask = -1, grad_output = -1;
    double output = -1, weights = -1, grad_query = -1, grad_key = -1, grad_value = -1, grad_parameters = -1;
    WireShape output_shape, weights_shape;
};

// Leaves a plan's reply in the call record and returns its error (empty when the call may run).
std::string reply(const Layout& l) {
    RecordWriter w;
    w.number(l.token), w.number(l.bytes);
    for (double at : {l.query, l.key, l.value, l.attn_mask, l.key_padding_mask, l.grad_output, l.output, l.weights,
                      l.grad_query, l.grad_key, l.grad_value, l.grad_parameters})
        w.number(at);
    w.shape(l.output_shape), w.shape(l.weights_shape);
    return l.error;
}

xattn::SdpaSettings settings_of(const SdpaCall& c) {
    xattn::SdpaSettings s;
    s.is_causal = c.is_causal;
    s.causal_alignment = c.bottom_right ? xattn::CausalAlignment::bottom_right : xattn::CausalAlignment::top_left;
    if (c.has_scale) s.scale = c.scale;
    s.dropout_p = c.dropout_p;
    s.seed = static_cast<std::uint64_t>(c.seed);
    s.enable_gqa = c.enable_gqa;
    s.need_weights = c.need_weights;
    return s;
}

std::size_t mask_bytes(MaskKind kind) { return kind == MaskKind::boolean ? 1 : 4; }

// A planned call waiting for its block: what to run and where each buffer is.
struct Pending {
    enum class Op { sdpa, sdpa_backward, mha, mha_backward, kv_attend } op = Op::sdpa;
    xattn::SdpaPlan sdpa;
    xattn::MhaPlan mha;
    xattn::KvAttendPlan kv;
    int module = 0;  // the MultiheadAttention or KV cache handle
    MaskKind mask_kind = MaskKind::none, kpm_kind = MaskKind::none;
    std::uint64_t bytes = 0;  // the block's planned size
    // Offsets in the block, as in Layout, and the workspace's.
    std::size_t query = 0, key = 0, value = 0, attn_mask = 0, key_padding_mask = 0, grad_output = 0;
    std::size_t output = 0, weights = 0, grad_query = 0, grad_key = 0, grad_value = 0, grad_parameters = 0;
    std::size_t workspace = 0;
};

std::map<int, Pending>& pending() {
    static std::map<int, Pending> table;
    return table;
}
int next_token = 1;

// Carves one buffer in counting mode and records its offset in the pending call and the reply.
// Sizes are 64-bit (a plan's total may pass 4 GiB); a block that large is refused before any run.
struct BlockPlanner {
    Carver carver{nullptr};
    void take(std::uint64_t bytes, std::size_t* pending_at, double* layout_at) {
        const std::uint64_t at = carver.bytes() - Carver::kSlack;
        carver.take<unsigned char>(bytes);
        *pending_at = static_cast<std::size_t>(at);
        if (layout_at) *layout_at = static_cast<double>(at);
    }
};

// The largest block a call may use: all of a 32-bit WebAssembly memory.
constexpr std::uint64_t kMaxBlock = std::uint64_t{1} << 31;

Layout keep(Pending p, Layout layout, BlockPlanner& block) {
    p.bytes = block.carver.bytes();
    layout.bytes = static_cast<double>(p.bytes);
    layout.token = next_token++;
    pending().emplace(layout.token, std::move(p));
    return layout;
}

Layout refusal(std::string error) {
    Layout l;
    l.error = std::move(error);
    return l;
}

// Plans scaledDotProductAttention (backward = false) or its gradient (backward = true).
Layout plan_sdpa_call(const SdpaCall& c, bool backward) {
    const Shape q = shape_of(c.query), k = shape_of(c.key), v = shape_of(c.value), m = shape_of(c.attn_mask);
    Pending p;
    p.mask_kind = static_cast<MaskKind>(c.mask_kind);
    p.op = backward ? Pending::Op::sdpa_backward : Pending::Op::sdpa;
    const xattn::Status st =
        backward ? xattn::plan_sdpa_backward(q, k, v, shape_of(c.grad_output), p.mask_kind, m, settings_of(c), &p.sdpa)
                 : xattn::plan_sdpa(q, k, v, p.mask_kind, m, settings_of(c), &p.sdpa);
    if (!st.ok()) return refusal(st.error);
    const xattn::SdpaPlan& plan = p.sdpa;
    Layout l;
    BlockPlanner b;
    b.take(4 * xattn::numel(q), &p.query, &l.query);
    b.take(4 * xattn::numel(k), &p.key, &l.key);
    b.take(4 * xattn::numel(v), &p.value, &l.value);
    if (p.mask_kind != MaskKind::none) b.take(mask_bytes(p.mask_kind) * xattn::numel(m), &p.attn_mask, &l.attn_mask);
    if (backward) b.take(4 * xattn::numel(plan.output_shape), &p.grad_output, &l.grad_output);
    b.take(4 * xattn::numel(plan.output_shape), &p.output, &l.output);
    if (plan.need_weights) b.take(4 * xattn::numel(plan.weights_shape), &p.weights, &l.weights);
    if (backward) {
        b.take(4 * xattn::numel(q), &p.grad_query, &l.grad_query);
        b.take(4 * xattn::numel(k), &p.grad_key, &l.grad_key);
        b.take(4 * xattn::numel(v), &p.grad_value, &l.grad_value);
    }
    b.take(plan.workspace_bytes, &p.workspace, nullptr);
    l.output_shape = wire_of(plan.output_shape);
    l.weights_shape = wire_of(plan.weights_shape);
    return keep(std::move(p), std::move(l), b);
}

std::string sdpa_plan() { return reply(plan_sdpa_call(read_sdpa_call(), false)); }
std::string sdpa_backward_plan() { return reply(plan_sdpa_call(read_sdpa_call(), true)); }

// MultiheadAttention objects live in a handle table; JS holds the integer handle.
std::map<int, std::unique_ptr<xattn::MultiheadAttention>>& modules() {
    static std::map<int, std::unique_ptr<xattn::MultiheadAttention>> table;
    return table;
}
int next_handle = 1;

xattn::MultiheadAttention* find_module(int handle) {
    const auto it = modules().find(handle);
    return it == modules().end() ? nullptr : it->second.get();
}

struct MhaConfigCall {
    double embed_dim = 0, num_heads = 0, kdim = 0, vdim = 0;  // JS checked integers in range; 0 = embed_dim
    double init_seed = 0;                                      // JS checked an integer in [0, 2^53)
    double dropout = 0;                                        // in [0, 1), checked by the core
    bool bias = true, batch_first = false, add_bias_kv = false, add_zero_attn = false;
};

struct Created {
    std::string error;
    int handle = 0;
};

// Room left after a module is built, so that the small allocations of later plans always fit.
constexpr std::size_t kHeadroom = std::size_t{1} << 20;

Created mha_create(const MhaConfigCall& w) {
    xattn::MhaConfig c;
    c.embed_dim = static_cast<std::size_t>(w.embed_dim);
    c.num_heads = static_cast<std::size_t>(w.num_heads);
    c.kdim = static_cast<std::size_t>(w.kdim);
    c.vdim = static_cast<std::size_t>(w.vdim);
    c.bias = w.bias;
    c.batch_first = w.batch_first;
    c.add_bias_kv = w.add_bias_kv;
    c.add_zero_attn = w.add_zero_attn;
    c.init_seed = static_cast<std::uint64_t>(w.init_seed);
    c.dropout = w.dropout;
    // The parameters are one allocation that may fail: a module that cannot fit is an error, not an abort. Then
    // the table's node, a few dozen bytes, which the headroom probe makes sure of.
    std::unique_ptr<xattn::MultiheadAttention> m;
    if (xattn::Status st = xattn::MultiheadAttention::create(c, &m); !st.ok()) return {st.error, 0};
    void* probe = std::malloc(kHeadroom);
    if (!probe)
        return {"MultiheadAttention: after the parameters' " + std::to_string(xattn::MultiheadAttention::parameter_bytes(c)) +
                    " bytes, less than " + std::to_string(kHeadroom) + " bytes of WebAssembly memory would be left",
                0};
    std::free(probe);
    const int handle = next_handle++;
    modules()[handle] = std::move(m);
    return {"", handle};
}

bool mha_destroy(int handle) { return modules().erase(handle) != 0; }

std::string mha_set_parameter(int handle, const std::string& name, std::uintptr_t data, double count) {
    auto* m = find_module(handle);
    if (!m) return "MultiheadAttention: this module was disposed";
    return m->set_parameter(name, reinterpret_cast<const float*>(data), static_cast<std::size_t>(count)).error;
}

// Copies one parameter, `count` floats in PyTorch's layout, to `data`.
std::string mha_get_parameter(int handle, const std::string& name, std::uintptr_t data, double count) {
    auto* m = find_module(handle);
    if (!m) return "MultiheadAttention: this module was disposed";
    return m->get_parameter(name, reinterpret_cast<float*>(data), static_cast<std::size_t>(count)).error;
}

// Comma-separated "name:d0xd1" list of the parameters this configuration has.
std::string mha_parameter_shapes(int handle) {
    auto* m = find_module(handle);
    if (!m) return {};
    std::string out;
    for (const auto& [name, shape] : m->parameter_shapes()) {
        out += (out.empty() ? "" : ",") + name + ":";
        for (std::size_t d = 0; d < shape.size(); ++d) out += (d ? "x" : "") + std::to_string(shape[d]);
    }
    return out;
}

// Plans MultiheadAttention.forward (backward = false) or .backward.
Layout plan_mha_call(const MhaCall& c, bool backward) {
    auto* m = find_module(c.module);
    if (!m) return refusal("MultiheadAttention: this module was disposed");
    const Shape q = shape_of(c.query), k = shape_of(c.key), v = shape_of(c.value);
    const Shape kpm = shape_of(c.key_padding_mask), am = shape_of(c.attn_mask);
    Pending p;
    p.op = backward ? Pending::Op::mha_backward : Pending::Op::mha;
    p.module = c.module;
    p.kpm_kind = static_cast<MaskKind>(c.kpm_kind);
    p.mask_kind = static_cast<MaskKind>(c.attn_kind);
    xattn::MhaSettings settings;
    settings.need_weights = c.need_weights;
    settings.average_attn_weights = c.average_attn_weights;
    settings.is_causal = c.is_causal;
    settings.training = c.training;
    settings.seed = static_cast<std::uint64_t>(c.seed);
    const xattn::Status st =
        backward ? m->plan_backward(q, k, v, shape_of(c.grad_output), p.kpm_kind, kpm, p.mask_kind, am, settings, &p.mha)
                 : m->plan_forward(q, k, v, p.kpm_kind, kpm, p.mask_kind, am, settings, &p.mha);
    if (!st.ok()) return refusal(st.error);
    Layout l;
    BlockPlanner b;
    b.take(4 * xattn::numel(q), &p.query, &l.query);
    b.take(4 * xattn::numel(k), &p.key, &l.key);
    b.take(4 * xattn::numel(v), &p.value, &l.value);
    if (p.kpm_kind != MaskKind::none)
        b.take(mask_bytes(p.kpm_kind) * xattn::numel(kpm), &p.key_padding_mask, &l.key_padding_mask);
    if (p.mask_kind != MaskKind::none) b.take(mask_bytes(p.mask_kind) * xattn::numel(am), &p.attn_mask, &l.attn_mask);
    if (backward) b.take(4 * xattn::numel(q), &p.grad_output, &l.grad_output);
    b.take(4 * xattn::numel(p.mha.output_shape), &p.output, &l.output);
    if (p.mha.need_weights) b.take(4 * xattn::numel(p.mha.weights_shape), &p.weights, &l.weights);
    if (backward) {
        b.take(4 * xattn::numel(q), &p.grad_query, &l.grad_query);
        b.take(4 * xattn::numel(k), &p.grad_key, &l.grad_key);
        b.take(4 * xattn::numel(v), &p.grad_value, &l.grad_value);
        b.take(4 * std::uint64_t{m->parameter_floats()}, &p.grad_parameters, &l.grad_parameters);
    }
    b.take(p.mha.workspace_bytes, &p.workspace, nullptr);
    l.output_shape = wire_of(p.mha.output_shape);
    l.weights_shape = wire_of(p.mha.weights_shape);
    return keep(std::move(p), std::move(l), b);
}

std::string mha_plan() { return reply(plan_mha_call(read_mha_call(), false)); }
std::string mha_backward_plan() { return reply(plan_mha_call(read_mha_call(), true)); }

// Comma-separated "name:offset" list: where each parameter's gradient starts among run_backward's.
std::string mha_parameter_offsets(int handle) {
    auto* m = find_module(handle);
    if (!m) return {};
    std::string out;
    for (const auto& [name, shape] : m->parameter_shapes())
        out += (out.empty() ? "" : ",") + name + ":" + std::to_string(m->parameter_offset(name));
    return out;
}

// KV caches live in a handle table too.
std::map<int, std::unique_ptr<xattn::KvCache>>& caches() {
    static std::map<int, std::unique_ptr<xattn::KvCache>> table;
    return table;
}

xattn::KvCache* find_cache(int handle) {
    const auto it = caches().find(handle);
    return it == caches().end() ? nullptr : it->second.get();
}

struct KvConfigCall {
    double batch = 1, kv_heads = 0, head_dim = 0, value_dim = 0, capacity = 0;  // JS checked integers in range
    bool float16 = false;
};

Created kv_create(const KvConfigCall& w) {
    xattn::KvCacheConfig c;
    c.batch = static_cast<std::size_t>(w.batch);
    c.kv_heads = static_cast<std::size_t>(w.kv_heads);
    c.head_dim = static_cast<std::size_t>(w.head_dim);
    c.value_dim = static_cast<std::size_t>(w.value_dim);
    c.capacity = static_cast<std::size_t>(w.capacity);
    c.dtype = w.float16 ? xattn::CacheDtype::float16 : xattn::CacheDtype::float32;
    std::unique_ptr<xattn::KvCache> cache;
    if (xattn::Status st = xattn::KvCache::create(c, &cache); !st.ok()) return {st.error, 0};
    void* probe = std::malloc(kHeadroom);
    if (!probe)
        return {"kv_cache: after its " + std::to_string(xattn::KvCache::storage_bytes(c)) + " bytes of storage, less than " +
                    std::to_string(kHeadroom) + " bytes of WebAssembly memory would be left",
                0};
    std::free(probe);
    const int handle = next_handle++;
    caches()[handle] = std::move(cache);
    return {"", handle};
}

bool kv_destroy(int handle) { return caches().erase(handle) != 0; }
double kv_length(int handle) { return find_cache(handle) ? static_cast<double>(find_cache(handle)->length()) : -1; }

// Appends key (its shape first in the call record) and value (its shape next).
std::string kv_append(int handle, std::uintptr_t key, std::uintptr_t value) {
    RecordReader r;
    const Shape key_shape = shape_of(r.shape()), value_shape = shape_of(r.shape());
    auto* c = find_cache(handle);
    if (!c) return "kv_cache: this cache was disposed";
    return c->append(key_shape, reinterpret_cast<const float*>(key), value_shape, reinterpret_cast<const float*>(value))
        .error;
}

std::string kv_truncate(int handle, double length) {
    auto* c = find_cache(handle);
    if (!c) return "kv_cache: this cache was disposed";
    return c->truncate(static_cast<std::size_t>(length)).error;
}

// Copies the held keys (which = 0) or values (1), widened to float32, to `out`.
void kv_copy(int handle, int which, std::uintptr_t out) {
    auto* c = find_cache(handle);
    if (!c) return;
    if (which == 0) c->copy_keys(reinterpret_cast<float*>(out));
    else c->copy_values(reinterpret_cast<float*>(out));
}

struct KvAttendCall {
    int cache = 0;
    WireShape query, attn_mask;
    int mask_kind = 0;
    bool is_causal = false, has_scale = false, need_weights = false;
    double scale = 0;
};

KvAttendCall read_kv_attend_call() {
    RecordReader r;
    KvAttendCall c;
    c.cache = r.integer();
    c.query = r.shape(), c.attn_mask = r.shape();
    c.mask_kind = r.integer();
    c.is_causal = r.flag(), c.has_scale = r.flag();
    c.scale = r.number();
    c.need_weights = r.flag();
    return c;
}

Layout plan_kv_attend(const KvAttendCall& c) {
    auto* cache = find_cache(c.cache);
    if (!cache) return refusal("kv_cache: this cache was disposed");
    const Shape q = shape_of(c.query), m = shape_of(c.attn_mask);
    Pending p;
    p.op = Pending::Op::kv_attend;
    p.module = c.cache;
    p.mask_kind = static_cast<MaskKind>(c.mask_kind);
    xattn::KvAttendSettings settings;
    settings.is_causal = c.is_causal;
    if (c.has_scale) settings.scale = c.scale;
    settings.need_weights = c.need_weights;
    if (xattn::Status st = cache->plan_attend(q, p.mask_kind, m, settings, &p.kv); !st.ok()) return refusal(st.error);
    Layout l;
    BlockPlanner b;
    b.take(4 * xattn::numel(q), &p.query, &l.query);
    if (p.mask_kind != MaskKind::none) b.take(mask_bytes(p.mask_kind) * xattn::numel(m), &p.attn_mask, &l.attn_mask);
    b.take(4 * xattn::numel(p.kv.output_shape), &p.output, &l.output);
    if (c.need_weights) b.take(4 * xattn::numel(p.kv.weights_shape), &p.weights, &l.weights);
    b.take(p.kv.workspace_bytes, &p.workspace, nullptr);
    l.output_shape = wire_of(p.kv.output_shape);
    l.weights_shape = wire_of(p.kv.weights_shape);
    return keep(std::move(p), std::move(l), b);
}

std::string kv_attend_plan() { return reply(plan_kv_attend(read_kv_attend_call())); }

// A mask for the run: its shape was checked by the plan, so the run needs none (and copies none).
xattn::MaskRef mask_at(MaskKind kind, unsigned char* at) {
    xattn::MaskRef m;
    m.kind = kind;
    if (kind == MaskKind::boolean) m.bools = at;
    if (kind == MaskKind::additive) m.values = reinterpret_cast<const float*>(at);
    return m;
}

// Codes run returns; js/boundary.js turns them into messages.
enum RunResult { kRan = 0, kUnknownToken = 1, kModuleGone = 2, kTooLarge = 3, kCacheChanged = 4 };

// Runs a planned call on its block (64-byte aligned, of the planned size) and forgets the plan.
int run(int token, std::uintptr_t block) {
    const auto it = pending().find(token);
    if (it == pending().end()) return kUnknownToken;
    const Pending& p = it->second;
    if (p.bytes > kMaxBlock) {  // JS refuses these before allocating; never run one whose offsets wrapped
        pending().erase(it);
        return kTooLarge;
    }
    unsigned char* base = reinterpret_cast<unsigned char*>(block);
    auto in = [&](std::size_t at) { return reinterpret_cast<const float*>(base + at); };
    auto out = [&](std::size_t at) { return reinterpret_cast<float*>(base + at); };
    int result = kRan;
    switch (p.op) {
    case Pending::Op::sdpa:
        xattn::run_sdpa(p.sdpa, in(p.query), in(p.key), in(p.value), mask_at(p.mask_kind, base + p.attn_mask),
                        out(p.output), p.sdpa.need_weights ? out(p.weights) : nullptr, base + p.workspace);
        break;
    case Pending::Op::sdpa_backward:
        xattn::run_sdpa_backward(p.sdpa, in(p.query), in(p.key), in(p.value), mask_at(p.mask_kind, base + p.attn_mask),
                                 in(p.grad_output), out(p.output), out(p.grad_query), out(p.grad_key),
                                 out(p.grad_value), base + p.workspace);
        break;
    case Pending::Op::mha: {
        const auto* m = find_module(p.module);
        if (!m) {
            result = kModuleGone;
            break;
        }
        const xattn::MhaMasks masks{mask_at(p.kpm_kind, base + p.key_padding_mask),
                                    mask_at(p.mask_kind, base + p.attn_mask)};
        m->run_forward(p.mha, in(p.query), in(p.key), in(p.value), masks, out(p.output),
                       p.mha.need_weights ? out(p.weights) : nullptr, base + p.workspace);
        break;
    }
    case Pending::Op::kv_attend: {
        const auto* c = find_cache(p.module);
        if (!c) {
            result = kModuleGone;
            break;
        }
        if (c->length() != p.kv.length) {  // planned for another length: its shapes no longer hold
            result = kCacheChanged;
            break;
        }
        c->run_attend(p.kv, in(p.query), mask_at(p.mask_kind, base + p.attn_mask), out(p.output),
                      p.kv.sdpa.need_weights ? out(p.weights) : nullptr, base + p.workspace);
        break;
    }
    case Pending::Op::mha_backward: {
        const auto* m = find_module(p.module);
        if (!m) {
            result = kModuleGone;
            break;
        }
        const xattn::MhaMasks masks{mask_at(p.kpm_kind, base + p.key_padding_mask),
                                    mask_at(p.mask_kind, base + p.attn_mask)};
        m->run_backward(p.mha, in(p.query), in(p.key), in(p.value), masks, in(p.grad_output), out(p.output),
                        out(p.grad_query), out(p.grad_key), out(p.grad_value), out(p.grad_parameters),
                        base + p.workspace);
        break;
    }
    }
    pending().erase(it);
    return result;
}

// Drops a plan that will not run (the block could not be had, or a copy failed). Unknown tokens are fine.
void forget(int token) { pending().erase(token); }

// Bytes currently allocated by malloc: what the leak tests watch (memory_bytes never shrinks).
double heap_in_use() { return static_cast<double>(mallinfo().uordblks); }

double memory_bytes() { return static_cast<double>(__builtin_wasm_memory_size(0)) * 65536.0; }

double pending_plans() { return static_cast<double>(pending().size()); }

std::string version() { return xattn::version(); }

double max_tensor_bytes() { return static_cast<double>(xattn::kMaxTensorBytes); }

// The thread count later plans record (xattn/threads.hpp); the JS layer sets it once per instance.
unsigned set_threads(unsigned n) { return xattn::set_num_threads(n); }
unsigned max_threads() { return xattn::max_threads(); }
// How long helpers poll for the next call before they sleep (xattn/threads.hpp); set once per instance.
unsigned set_spin_microseconds(unsigned us) { return xattn::set_spin_microseconds(us); }
// For the package's tests: split even tiny calls, and count the tasks helper threads ran.
void set_min_work_per_worker(double flops) { xattn::kernels::set_min_work_per_worker(flops); }
double helper_tasks_run() { return static_cast<double>(xattn::kernels::helper_tasks_run()); }
void set_every_worker_takes_part(bool on) { xattn::kernels::set_every_worker_takes_part(on); }
bool helpers_asleep(unsigned threads) { return xattn::kernels::helpers_asleep(threads); }

// The kernel set every call runs (its instruction set and register blocking; kernels/blocking.cpp).
std::string kernels_name() { return xattn::kernels::best_kernels().name; }

}  // namespace

EMSCRIPTEN_BINDINGS(xattn) {
    using emscripten::value_object;
    value_object<MhaConfigCall>("MhaConfigCall")
        .field("embedDim", &MhaConfigCall::embed_dim)
        .field("numHeads", &MhaConfigCall::num_heads)
        .field("kdim", &MhaConfigCall::kdim)
        .field("vdim", &MhaConfigCall::vdim)
        .field("initSeed", &MhaConfigCall::init_seed)
        .field("dropout", &MhaConfigCall::dropout)
        .field("bias", &MhaConfigCall::bias)
        .field("batchFirst", &MhaConfigCall::batch_first)
        .field("addBiasKv", &MhaConfigCall::add_bias_kv)
        .field("addZeroAttn", &MhaConfigCall::add_zero_attn);
    value_object<Created>("Created").field("error", &Created::error).field("handle", &Created::handle);
    emscripten::function("kernelsName", &kernels_name);
    emscripten::function("callRecord", &call_record_address);
    emscripten::function("sdpaPlan", &sdpa_plan);
    emscripten::function("sdpaBackwardPlan", &sdpa_backward_plan);
    emscripten::function("mhaPlan", &mha_plan);
    emscripten::function("mhaBackwardPlan", &mha_backward_plan);
    emscripten::function("mhaParameterOffsets", &mha_parameter_offsets);
    emscripten::function("run", &run);
    emscripten::function("forget", &forget);
    emscripten::function("mhaCreate", &mha_create);
    emscripten::function("mhaDestroy", &mha_destroy);
    emscripten::function("mhaSetParameter", &mha_set_parameter);
    emscripten::function("mhaGetParameter", &mha_get_parameter);
    emscripten::function("mhaParameterShapes", &mha_parameter_shapes);
    value_object<KvConfigCall>("KvConfigCall")
        .field("batch", &KvConfigCall::batch)
        .field("kvHeads", &KvConfigCall::kv_heads)
        .field("headDim", &KvConfigCall::head_dim)
        .field("valueDim", &KvConfigCall::value_dim)
        .field("capacity", &KvConfigCall::capacity)
        .field("float16", &KvConfigCall::float16);
    emscripten::function("kvCreate", &kv_create);
    emscripten::function("kvDestroy", &kv_destroy);
    emscripten::function("kvLength", &kv_length);
    emscripten::function("kvAppend", &kv_append);
    emscripten::function("kvTruncate", &kv_truncate);
    emscripten::function("kvCopy", &kv_copy);
    emscripten::function("kvAttendPlan", &kv_attend_plan);
    emscripten::function("memoryBytes", &memory_bytes);
    emscripten::function("heapInUse", &heap_in_use);
    emscripten::function("pendingPlans", &pending_plans);
    emscripten::function("version", &version);
    emscripten::function("maxTensorBytes", &max_tensor_bytes);
    emscripten::function("setThreads", &set_threads);
    emscripten::function("maxThreads", &max_threads);
    emscripten::function("setSpinMicroseconds", &set_spin_microseconds);
    emscripten::function("setMinWorkPerWorker", &set_min_work_per_worker);
    emscripten::function("helperTasksRun", &helper_tasks_run);
    emscripten::function("setEveryWorkerTakesPart", &set_every_worker_takes_part);
    emscripten::function("helpersAsleep", &helpers_asleep);
}
