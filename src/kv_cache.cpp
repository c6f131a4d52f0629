// The KV cache: storage (in the blocks of kernels/kv_layout.hpp), append/truncate, and attend on the decoding or
// the tiled kernels, which read the blocks in place (float16 storage widened tile by tile), never copying the
// cached keys and values.
#include "xattn/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "kernels/half.hpp"
#include "kernels/kernels.hpp"
#include "kernels/kv_layout.hpp"

namespace xattn {
namespace {

// Heads wider than this would leave the tiled kernels (for the row kernel, which reads packed float32).
constexpr std::size_t kMaxHeadDim = 16384;
// Stacked query rows up to this many (without weights) take the decoding kernel; more fill the wide tiles.
constexpr std::size_t kFewRows = 16;

double num(std::size_t n) { return static_cast<double>(n); }

}  // namespace

Status KvCache::check_config(const KvCacheConfig& c) {
    const Function fn = Function::kv_create;
    const std::size_t Ev = c.value_dim ? c.value_dim : c.head_dim;
    if (c.batch == 0 || c.kv_heads == 0 || c.head_dim == 0 || c.capacity == 0)
        return Status::fail(fn, Message::cache_dims_not_positive,
                            {Argument::batch, Argument::kv_heads, Argument::head_dim, Argument::capacity},
                            {num(c.batch), num(c.kv_heads), num(c.head_dim), num(c.capacity)});
    if (c.head_dim > kMaxHeadDim || Ev > kMaxHeadDim)
        return Status::fail(fn, Message::cache_head_dim_limit, {Argument::head_dim, Argument::value_dim},
                            {num(kMaxHeadDim), num(c.head_dim), num(Ev)});
    const std::uint64_t bytes = c.dtype == CacheDtype::float16 ? 2 : 4;
    for (const auto& [name, dim] : {std::pair{Argument::keys, c.head_dim}, std::pair{Argument::values, Ev}})
        if (Status st = check_tensor_size(fn, name, {c.batch, c.kv_heads, c.capacity, dim}, bytes); !st.ok()) return st;
    return {};
}

std::uint64_t KvCache::storage_bytes(const KvCacheConfig& c) {
    // In 64 bits: check_config has bounded each factor, not what 32-bit size_t (wasm) makes of the product.
    const std::uint64_t Ev = c.value_dim ? c.value_dim : c.head_dim;
    const std::uint64_t evb = kernels::padded_value_dim(Ev), rows = kernels::padded_rows(std::uint64_t{c.capacity});
    return std::uint64_t{c.batch} * c.kv_heads * rows * (c.head_dim + evb) * (c.dtype == CacheDtype::float16 ? 2 : 4) +
           c.capacity;
}

Status KvCache::create(const KvCacheConfig& config, std::unique_ptr<KvCache>* out) {
    if (Status st = check_config(config); !st.ok()) return st;
    // calloc, not new: in wasm (built without exceptions) a failing new aborts the module. Zeroed, so that the
    // unused positions of a partly filled key block, which the decoding kernel reads (and ignores), are numbers.
    const std::uint64_t bytes = storage_bytes(config);
    Storage storage(bytes <= SIZE_MAX ? static_cast<unsigned char*>(std::calloc(static_cast<std::size_t>(bytes), 1)) : nullptr);
    void* spare = storage ? std::malloc(std::size_t{1} << 16) : nullptr;  // room for the object itself
    if (!spare)
        return Status::fail(Function::kv_create, Message::cache_too_large, {}, {static_cast<double>(bytes)});
    std::free(spare);
    out->reset(new KvCache(config, std::move(storage)));
    return {};
}

KvCache::KvCache(const KvCacheConfig& config)
    : KvCache(config, [&config] {
          if (Status st = check_config(config); !st.ok()) throw std::invalid_argument(st.message());
          Storage storage(static_cast<unsigned char*>(std::calloc(static_cast<std::size_t>(storage_bytes(config)), 1)));
          if (!storage) throw std::bad_alloc();
          return storage;
      }()) {}

KvCache::KvCache(const KvCacheConfig& config, Storage storage) : config_(config), storage_(std::move(storage)) {}

kernels::KvLayout KvCache::layout() const { return {config_.head_dim, value_dim()}; }

unsigned char* KvCache::key_storage() const { return storage_.get(); }

unsigned char* KvCache::value_storage() const {
    return storage_.get() + config_.batch * config_.kv_heads * layout().key_elements(config_.capacity) * element_bytes();
}

std::uint8_t* KvCache::position_flags() const {
    const kernels::KvLayout lay = layout();
    const std::size_t elements =
        config_.batch * config_.kv_heads * (lay.key_elements(config_.capacity) + lay.value_elements(config_.capacity));
    return storage_.get() + elements * element_bytes();
}

Status KvCache::check_append(const Shape& ks, const Shape& vs) const {
    // Shapes are copied only on refusal: a valid append allocates nothing.
    const std::size_t B = config_.batch, H = config_.kv_heads, E = config_.head_dim, Ev = value_dim();
    if (ks.size() != 4 || vs.size() != 4 || ks[0] != B || ks[1] != H || ks[3] != E || vs[0] != B || vs[1] != H ||
        vs[3] != Ev || vs[2] != ks[2])
        return Status::fail(Function::kv_append, Message::cache_append_shape, {}, {num(B), num(H), num(E), num(Ev)}, {ks, vs});
    const std::size_t n = ks[2];
    if (n == 0) return Status::fail(Function::kv_append, Message::cache_append_empty, {}, {}, {ks, vs});
    if (n > config_.capacity - length_)
        return Status::fail(Function::kv_append, Message::cache_append_full, {}, {num(n), num(length_), num(config_.capacity)},
                            {ks, vs});
    return {};
}

Status KvCache::append(const Shape& ks, const float* key, const Shape& vs, const float* value) {
    if (Status st = check_append(ks, vs); !st.ok()) return st;
    const std::size_t B = config_.batch, H = config_.kv_heads, E = config_.head_dim, Ev = value_dim();
    const std::size_t n = ks[2];
    const bool half = config_.dtype == CacheDtype::float16;
    const kernels::KvLayout lay = layout();
    const std::size_t evb = lay.evb();
    std::uint8_t* flags = position_flags() + length_;  // (n) the new positions'
    std::memset(flags, 0, n);
    // Each element to its place in the blocks (kv_layout.hpp); value padding columns zero.
    const auto store = [&](auto* keys, auto* values, auto convert, auto special) {
        for (std::size_t p = 0; p < B * H; ++p) {
            auto* kd = keys + p * lay.key_elements(config_.capacity);      // problem p's key blocks
            auto* vd = values + p * lay.value_elements(config_.capacity);  // its value tiles
            for (std::size_t t = 0; t < n; ++t) {
                const std::size_t pos = length_ + t;
                const float* k = key + (p * n + t) * E;     // (E) key of head p, new position t
                const float* v = value + (p * n + t) * Ev;  // (Ev)
                bool key_special = false, value_special = false;
                for (std::size_t c = 0; c < E; ++c) {
                    const auto x = convert(k[c]);
                    kd[lay.key_offset(pos, c)] = x;
                    key_special |= special(x);
                }
                for (std::size_t c = 0; c < evb; ++c) {
                    const auto x = convert(c < Ev ? v[c] : 0.0f);
                    vd[lay.value_offset(pos, c)] = x;
                    value_special |= special(x);
                }
                flags[t] |= (key_special ? 1u : 0u) | (value_special ? 2u : 0u);
            }
        }
    };
    if (half)  // inf or NaN as stored: 65520 rounds to a half inf
        store(reinterpret_cast<std::uint16_t*>(key_storage()), reinterpret_cast<std::uint16_t*>(value_storage()),
              kernels::float_to_half, [](std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u; });
    else
        store(reinterpret_cast<float*>(key_storage()), reinterpret_cast<float*>(value_storage()), [](float x) { return x; },
              [](float x) { return !std::isfinite(x); });
    length_ += n;
    return {};
}

Status KvCache::truncate(std::size_t length) {
    if (length > length_)
        return Status::fail(Function::kv_truncate, Message::cache_truncate_past, {Argument::length}, {num(length), num(length_)});
    length_ = length;
    return {};
}

namespace {
// out (problems, length, D): element (pos, c) of problem p from its blocks at base + p · per_problem elements,
// offset at(pos, c), widened from float16 when `half`.
template <class At>
void gather(const unsigned char* base, bool half, std::size_t problems, std::size_t per_problem, std::size_t length,
            std::size_t D, At at, float* out) {
    for (std::size_t p = 0; p < problems; ++p)
        for (std::size_t pos = 0; pos < length; ++pos)
            for (std::size_t c = 0; c < D; ++c) {
                const std::size_t i = p * per_problem + at(pos, c);
                out[(p * length + pos) * D + c] = half ? kernels::half_to_float(reinterpret_cast<const std::uint16_t*>(base)[i])
                                                       : reinterpret_cast<const float*>(base)[i];
            }
}
}  // namespace

void KvCache::copy_keys(float* out) const {
    const kernels::KvLayout lay = layout();
    gather(key_storage(), config_.dtype == CacheDtype::float16, config_.batch * config_.kv_heads,
           lay.key_elements(config_.capacity), length_, config_.head_dim,
           [&](std::size_t pos, std::size_t c) { return lay.key_offset(pos, c); }, out);
}

void KvCache::copy_values(float* out) const {
    const kernels::KvLayout lay = layout();
    gather(value_storage(), config_.dtype == CacheDtype::float16, config_.batch * config_.kv_heads,
           lay.value_elements(config_.capacity), length_, value_dim(),
           [&](std::size_t pos, std::size_t c) { return lay.value_offset(pos, c); }, out);
}

Status KvCache::plan_attend(const Shape& q, MaskKind mask_kind, const Shape& mask_shape,
                            const KvAttendSettings& s, KvAttendPlan* plan) const {
    const std::size_t B = config_.batch, Hkv = config_.kv_heads, E = config_.head_dim, Ev = value_dim();
    if (q.size() != 4 || q[0] != B || q[3] != E || q[1] == 0 || q[1] % Hkv != 0)
        return Status::fail(Function::kv_attend, Message::cache_query_shape, {}, {num(B), num(E), num(Hkv)}, {q});
    const std::size_t Hq = q[1], L = q[2], G = Hq / Hkv, S = length_;
    KvAttendPlan p;
    p.length = S;
    p.output_shape = {B, Hq, L, Ev};
    p.weights_shape = {B, Hq, L, S};
    // Decoding: the G query heads of a key/value head as G·L rows of one problem, each key read once. With
    // L = 1 the bottom-right causal rule hides nothing, so it stacks too. A mask stacks only into the decoding
    // kernel (few rows, no weights), which places each row's mask by the per-head plan.
    const bool few = G * L <= kFewRows && !s.need_weights;
    p.stacked = (L == 1 || !s.is_causal) && (mask_kind == MaskKind::none || few);
    p.few_rows = p.stacked && few;
    SdpaSettings settings;
    settings.scale = s.scale;
    settings.need_weights = s.need_weights;
    SdpaSettings per_head = settings;
    per_head.is_causal = s.is_causal;
    per_head.causal_alignment = CausalAlignment::bottom_right;
    per_head.enable_gqa = true;
    Status st;
    if (p.stacked) {
        if (mask_kind != MaskKind::none)
            st = plan_sdpa(q, {B, Hkv, S, E}, {B, Hkv, S, Ev}, mask_kind, mask_shape, per_head, &p.mask_plan);
        if (st.ok())
            st = plan_sdpa({B, Hkv, G * L, E}, {B, Hkv, S, E}, {B, Hkv, S, Ev}, MaskKind::none, {}, settings, &p.sdpa);
    } else {
        st = plan_sdpa(q, {B, Hkv, S, E}, {B, Hkv, S, Ev}, mask_kind, mask_shape, per_head, &p.sdpa);
    }
    if (!st.ok()) return st.as(Function::kv_attend);  // SDPA's refusal, under the cache's name
    const kernels::KernelSet& set = *p.sdpa.kernel_set;
    const kernels::AttentionProblem ap = kernels::attention_problem(p.sdpa, nullptr, nullptr, nullptr, {}, nullptr, nullptr);
    // The tiles may widen float16 keys and values: the workspace is planned for this cache's storage.
    kernels::AttentionProblem sized = ap;
    sized.kv_float16 = config_.dtype == CacheDtype::float16;
    sized.kv_blocked = true;
    p.workspace_bytes = p.sdpa.batch == 0 ? 0 : p.few_rows ? set.few_rows_workspace(sized) : set.attention_workspace(sized);
    *plan = std::move(p);
    return {};
}

void KvCache::run_attend(const KvAttendPlan& plan, const float* query, const MaskRef& mask, float* output,
                         float* weights, void* workspace) const {
    const SdpaPlan& sp = plan.sdpa;
    if (sp.batch == 0 || sp.L == 0) return;
    const kernels::KernelSet& set = *sp.kernel_set;
    const bool half = config_.dtype == CacheDtype::float16;
    kernels::AttentionProblem p = kernels::attention_problem(sp, query, nullptr, nullptr, mask, output,
                                                             sp.need_weights ? weights : nullptr);
    p.kv_float16 = half;
    if (half) {
        p.key16 = reinterpret_cast<const std::uint16_t*>(key_storage());
        p.value16 = reinterpret_cast<const std::uint16_t*>(value_storage());
    } else {
        p.key = reinterpret_cast<const float*>(key_storage());
        p.value = reinterpret_cast<const float*>(value_storage());
    }
    p.kv_position_flags = position_flags();
    p.kv_blocked = true;
    if (plan.stacked && plan.mask_plan.mask_kind != MaskKind::none) {  // the decoding kernel's rows, per head
        p.mask_kind = plan.mask_plan.mask_kind;
        p.mask_bools = mask.bools;
        p.mask_values = mask.values;
        p.plan = &plan.mask_plan;
        p.mask_key_stride = plan.mask_plan.mask_col_stride();
    }
    p.key_stride = layout().key_elements(config_.capacity);
    p.value_stride = layout().value_elements(config_.capacity);
    if (plan.few_rows) set.few_rows(p, workspace);
    else set.attention(p, workspace);
}

void KvCache::append(const xt::xarray<float>& key, const xt::xarray<float>& value) {
    const Shape ks(key.shape().begin(), key.shape().end()), vs(value.shape().begin(), value.shape().end());
    if (Status st = append(ks, key.data(), vs, value.data()); !st.ok()) throw std::invalid_argument(st.message());
}

AttentionResult KvCache::attend(const xt::xarray<float>& query, const KvAttendOptions& o) const {
    const Shape q(query.shape().begin(), query.shape().end());
    const MaskRef mask = o.attn_mask.ref();
    KvAttendPlan plan;
    if (Status st = plan_attend(q, mask.kind, mask.shape, o, &plan); !st.ok()) throw std::invalid_argument(st.message());
    AttentionResult r;
    r.output = xt::xarray<float>::from_shape(plan.output_shape);
    r.weights = xt::xarray<float>::from_shape(o.need_weights ? plan.weights_shape : Shape{0});
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_attend(plan, query.data(), mask, r.output.data(), o.need_weights ? r.weights.data() : nullptr, workspace.data());
    return r;
}

xt::xarray<float> KvCache::keys() const {
    xt::xarray<float> k = xt::xarray<float>::from_shape({config_.batch, config_.kv_heads, length_, config_.head_dim});
    copy_keys(k.data());
    return k;
}

xt::xarray<float> KvCache::values() const {
    xt::xarray<float> v = xt::xarray<float>::from_shape({config_.batch, config_.kv_heads, length_, value_dim()});
    copy_values(v.data());
    return v;
}

}  // namespace xattn
