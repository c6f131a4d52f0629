// The WebAssembly surface of xattn: thin, mechanical Embind functions over the no-throw layer.
//
// No C++ exception may cross into JavaScript (see the toolchain notes: a throw leaks memory and
// shadow stack), so every function validates first through plan_* and returns the error as a
// string ("" = success). The JS package (js/api.js) owns all ergonomics: it checks JS types and
// numbers, copies inputs into the heap, calls these, copies results out and frees.
//
// Shapes travel through a small "dims" area the JS side writes into: a Uint32 array of ranks and
// dims in heap memory. Outputs' shapes come back through the same area.
#include <emscripten/bind.h>
#include <malloc.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xattn/xattn.hpp"

namespace {

using xattn::MaskKind;
using xattn::Shape;

// Reads `count` shapes laid out as [rank, d0, d1, …, rank, d0, …] starting at dims.
std::vector<Shape> read_shapes(std::uintptr_t dims, int count) {
    const auto* p = reinterpret_cast<const std::uint32_t*>(dims);
    std::vector<Shape> shapes(static_cast<std::size_t>(count));
    for (Shape& s : shapes) {
        const std::uint32_t rank = *p++;
        s.assign(p, p + rank);
        p += rank;
    }
    return shapes;
}

// Writes shapes back in the same layout.
void write_shapes(std::uintptr_t dims, const std::vector<Shape>& shapes) {
    auto* p = reinterpret_cast<std::uint32_t*>(dims);
    for (const Shape& s : shapes) {
        *p++ = static_cast<std::uint32_t>(s.size());
        for (std::size_t d : s) *p++ = static_cast<std::uint32_t>(d);
    }
}

xattn::MaskRef mask_ref(int kind, std::uintptr_t data, const Shape& shape) {
    xattn::MaskRef m;
    m.kind = static_cast<MaskKind>(kind);
    if (m.kind == MaskKind::boolean) m.bools = reinterpret_cast<const std::uint8_t*>(data);
    if (m.kind == MaskKind::additive) m.values = reinterpret_cast<const float*>(data);
    m.shape = shape;
    return m;
}

xattn::SdpaSettings sdpa_settings(bool is_causal, int alignment, bool has_scale, double scale, double dropout_p,
                                  double seed, bool enable_gqa, bool need_weights) {
    xattn::SdpaSettings s;
    s.is_causal = is_causal;
    s.causal_alignment = alignment ? xattn::CausalAlignment::bottom_right : xattn::CausalAlignment::top_left;
    if (has_scale) s.scale = scale;
    s.dropout_p = dropout_p;
    s.seed = static_cast<std::uint64_t>(seed);  // JS checked: an integer in [0, 2^53)
    s.enable_gqa = enable_gqa;
    s.need_weights = need_weights;
    return s;
}

// Reads the query, key, value and mask shapes from dims (mask rank 0 when there is none) and plans.
xattn::Status plan_sdpa_call(std::uintptr_t dims, int mask_kind, const xattn::SdpaSettings& settings,
                             xattn::SdpaPlan* plan, std::vector<Shape>* shapes) {
    *shapes = read_shapes(dims, 4);
    const auto& s = *shapes;
    return xattn::plan_sdpa(s[0], s[1], s[2], static_cast<MaskKind>(mask_kind), s[3], settings, plan);
}

// Validates; on success dims is overwritten with the output shape then the weights shape.
std::string sdpa_plan(std::uintptr_t dims, int mask_kind, bool is_causal, int alignment, bool has_scale, double scale,
                      double dropout_p, double seed, bool enable_gqa, bool need_weights) {
    xattn::SdpaPlan plan;
    std::vector<Shape> shapes;
    const xattn::Status st = plan_sdpa_call(
        dims, mask_kind, sdpa_settings(is_causal, alignment, has_scale, scale, dropout_p, seed, enable_gqa, need_weights),
        &plan, &shapes);
    if (st.ok()) write_shapes(dims, {plan.output_shape, plan.weights_shape});
    return st.error;
}

// Same arguments as sdpa_plan (dims re-written by the caller) plus the buffers.
std::string sdpa_run(std::uintptr_t dims, int mask_kind, bool is_causal, int alignment, bool has_scale, double scale,
                     double dropout_p, double seed, bool enable_gqa, bool need_weights, std::uintptr_t query,
                     std::uintptr_t key, std::uintptr_t value, std::uintptr_t mask, std::uintptr_t output,
                     std::uintptr_t weights) {
    xattn::SdpaPlan plan;
    std::vector<Shape> shapes;
    const xattn::Status st = plan_sdpa_call(
        dims, mask_kind, sdpa_settings(is_causal, alignment, has_scale, scale, dropout_p, seed, enable_gqa, need_weights),
        &plan, &shapes);
    if (!st.ok()) return st.error;
    xattn::run_sdpa(plan, reinterpret_cast<const float*>(query), reinterpret_cast<const float*>(key),
                    reinterpret_cast<const float*>(value), mask_ref(mask_kind, mask, shapes[3]),
                    reinterpret_cast<float*>(output), need_weights ? reinterpret_cast<float*>(weights) : nullptr);
    return {};
}

// dims holds query, key, value, mask and grad_output shapes. Validates, then computes the output
// and the three gradients into buffers shaped like the output, query, key and value.
std::string sdpa_grad_run(std::uintptr_t dims, int mask_kind, bool is_causal, int alignment, bool has_scale,
                          double scale, double dropout_p, double seed, bool enable_gqa, bool run, std::uintptr_t query,
                          std::uintptr_t key, std::uintptr_t value, std::uintptr_t mask, std::uintptr_t grad_output,
                          std::uintptr_t output, std::uintptr_t grad_query, std::uintptr_t grad_key,
                          std::uintptr_t grad_value) {
    const auto shapes = read_shapes(dims, 5);
    xattn::SdpaPlan plan;
    const xattn::Status st = xattn::plan_sdpa_backward(
        shapes[0], shapes[1], shapes[2], shapes[4], static_cast<MaskKind>(mask_kind), shapes[3],
        sdpa_settings(is_causal, alignment, has_scale, scale, dropout_p, seed, enable_gqa, false), &plan);
    if (!st.ok() || !run) return st.error;
    xattn::run_sdpa_backward(plan, reinterpret_cast<const float*>(query), reinterpret_cast<const float*>(key),
                             reinterpret_cast<const float*>(value), mask_ref(mask_kind, mask, shapes[3]),
                             reinterpret_cast<const float*>(grad_output), reinterpret_cast<float*>(output),
                             reinterpret_cast<float*>(grad_query), reinterpret_cast<float*>(grad_key),
                             reinterpret_cast<float*>(grad_value));
    return {};
}

// MultiheadAttention objects live in a handle table; JS holds the integer handle.
std::map<int, std::unique_ptr<xattn::MultiheadAttention>>& modules() {
    static std::map<int, std::unique_ptr<xattn::MultiheadAttention>> table;
    return table;
}
int next_handle = 1;

// Returns "" and writes the new handle into *handle_out (an int32 in the heap), or an error.
std::string mha_create(double embed_dim, double num_heads, double kdim, double vdim, bool bias, bool batch_first,
                       bool add_bias_kv, bool add_zero_attn, std::uintptr_t handle_out) {
    xattn::MhaConfig c;
    c.embed_dim = static_cast<std::size_t>(embed_dim);
    c.num_heads = static_cast<std::size_t>(num_heads);
    c.kdim = static_cast<std::size_t>(kdim);
    c.vdim = static_cast<std::size_t>(vdim);
    c.bias = bias;
    c.batch_first = batch_first;
    c.add_bias_kv = add_bias_kv;
    c.add_zero_attn = add_zero_attn;
    if (xattn::Status st = xattn::MultiheadAttention::check_config(c); !st.ok()) return st.error;
    const int handle = next_handle++;
    modules()[handle] = std::make_unique<xattn::MultiheadAttention>(c);
    *reinterpret_cast<std::int32_t*>(handle_out) = handle;
    return {};
}

bool mha_destroy(int handle) { return modules().erase(handle) != 0; }

xattn::MultiheadAttention* find_module(int handle) {
    const auto it = modules().find(handle);
    return it == modules().end() ? nullptr : it->second.get();
}

std::string mha_set_parameter(int handle, const std::string& name, std::uintptr_t data, double count) {
    auto* m = find_module(handle);
    if (!m) return "MultiheadAttention: this module was disposed";
    return m->set_parameter(name, reinterpret_cast<const float*>(data), static_cast<std::size_t>(count)).error;
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

// Reads the query, key, value, key_padding_mask and attn_mask shapes from dims and plans.
xattn::Status plan_mha_call(const xattn::MultiheadAttention& m, std::uintptr_t dims, int kpm_kind, int attn_kind,
                            bool need_weights, bool average, bool is_causal, xattn::MhaPlan* plan,
                            std::vector<Shape>* shapes) {
    *shapes = read_shapes(dims, 5);
    const auto& s = *shapes;
    return m.plan_forward(s[0], s[1], s[2], static_cast<MaskKind>(kpm_kind), s[3], static_cast<MaskKind>(attn_kind),
                          s[4], need_weights, average, is_causal, plan);
}

// Validates; on success dims is overwritten with the output shape then the weights shape.
std::string mha_plan(int handle, std::uintptr_t dims, int kpm_kind, int attn_kind, bool need_weights, bool average,
                     bool is_causal) {
    auto* m = find_module(handle);
    if (!m) return "MultiheadAttention: this module was disposed";
    xattn::MhaPlan plan;
    std::vector<Shape> shapes;
    const xattn::Status st = plan_mha_call(*m, dims, kpm_kind, attn_kind, need_weights, average, is_causal, &plan, &shapes);
    if (st.ok()) write_shapes(dims, {plan.output_shape, plan.weights_shape});
    return st.error;
}

std::string mha_run(int handle, std::uintptr_t dims, int kpm_kind, int attn_kind, bool need_weights, bool average,
                    bool is_causal, std::uintptr_t query, std::uintptr_t key, std::uintptr_t value, std::uintptr_t kpm,
                    std::uintptr_t attn_mask, std::uintptr_t output, std::uintptr_t weights) {
    auto* m = find_module(handle);
    if (!m) return "MultiheadAttention: this module was disposed";
    xattn::MhaPlan plan;
    std::vector<Shape> shapes;
    const xattn::Status st = plan_mha_call(*m, dims, kpm_kind, attn_kind, need_weights, average, is_causal, &plan, &shapes);
    if (!st.ok()) return st.error;
    const xattn::MhaMasks masks{mask_ref(kpm_kind, kpm, shapes[3]), mask_ref(attn_kind, attn_mask, shapes[4])};
    m->run_forward(plan, reinterpret_cast<const float*>(query), reinterpret_cast<const float*>(key),
                   reinterpret_cast<const float*>(value), masks, reinterpret_cast<float*>(output),
                   need_weights ? reinterpret_cast<float*>(weights) : nullptr);
    return {};
}

// Bytes currently allocated by malloc: what the leak tests watch (memory_bytes never shrinks).
double heap_in_use() { return static_cast<double>(mallinfo().uordblks); }

double memory_bytes() { return static_cast<double>(__builtin_wasm_memory_size(0)) * 65536.0; }

std::string version() { return xattn::kVersion; }

double max_tensor_bytes() { return static_cast<double>(xattn::kMaxTensorBytes); }

}  // namespace

EMSCRIPTEN_BINDINGS(xattn) {
    emscripten::function("sdpaPlan", &sdpa_plan);
    emscripten::function("sdpaRun", &sdpa_run);
    emscripten::function("sdpaGradRun", &sdpa_grad_run);
    emscripten::function("mhaCreate", &mha_create);
    emscripten::function("mhaDestroy", &mha_destroy);
    emscripten::function("mhaSetParameter", &mha_set_parameter);
    emscripten::function("mhaParameterShapes", &mha_parameter_shapes);
    emscripten::function("mhaPlan", &mha_plan);
    emscripten::function("mhaRun", &mha_run);
    emscripten::function("memoryBytes", &memory_bytes);
    emscripten::function("heapInUse", &heap_in_use);
    emscripten::function("version", &version);
    emscripten::function("maxTensorBytes", &max_tensor_bytes);
}
