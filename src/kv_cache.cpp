// The KV cache's storage (in the blocks of kernels/kv_layout.hpp), each element's positions, append (turning keys
// by their positions when the cache has a rotary option), truncate and the copies of what is held. Attending is
// kv_cache_attend.cpp's.
#include "xattn/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "alloc_room.hpp"
#include "kernels/half.hpp"
#include "kernels/kernels.hpp"
#include "kernels/kv_layout.hpp"
#include "sdpa_kernels.hpp"

namespace xattn {
namespace {

// Heads wider than this would leave the tiled kernels (for the row kernel, which reads packed float32).
constexpr std::size_t kMaxHeadDim = 16384;

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
    if (c.rotary) {
        const std::size_t r = c.rotary->rotary_dim ? c.rotary->rotary_dim : c.head_dim;
        if (r % 2 != 0 || r > c.head_dim)
            return Status::fail(fn, Message::cache_rotary_dim, {Argument::rotary_dim, Argument::head_dim},
                                {num(c.head_dim), num(c.rotary->rotary_dim)});
        if (!(c.rotary->base > 0.0) || !std::isfinite(c.rotary->base))
            return Status::fail(fn, Message::base_range, {Argument::rotary_base}, {c.rotary->base});
    }
    return {};
}

std::uint64_t KvCache::storage_bytes(const KvCacheConfig& c) {
    // In 64 bits: check_config has bounded each factor, not what 32-bit size_t (wasm) makes of the product.
    const std::uint64_t Ev = c.value_dim ? c.value_dim : c.head_dim;
    const std::uint64_t evb = kernels::padded_value_dim(Ev), rows = kernels::padded_rows(std::uint64_t{c.capacity});
    return std::uint64_t{c.batch} * c.kv_heads * rows * (c.head_dim + evb) * (c.dtype == CacheDtype::float16 ? 2 : 4) +
           std::uint64_t{c.batch} * c.capacity;
}

Status KvCache::create(const KvCacheConfig& config, std::unique_ptr<KvCache>* out) {
    if (Status st = check_config(config); !st.ok()) return st;
    // calloc, not new (alloc_room.hpp). Zeroed, so that the unused positions of a partly filled key block, which the
    // decoding kernel reads (and ignores), are numbers.
    const std::uint64_t bytes = storage_bytes(config);
    Storage storage(bytes <= SIZE_MAX ? static_cast<unsigned char*>(std::calloc(static_cast<std::size_t>(bytes), 1)) : nullptr);
    if (!detail::allocated_with_room(storage.get()))
        return Status::fail(Function::kv_create, Message::cache_too_large, {}, {static_cast<double>(bytes)});
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

KvCache::KvCache(const KvCacheConfig& config, Storage storage)
    : config_(config), storage_(std::move(storage)), held_(config.batch, 0), appended_(config.batch, 0),
      turned_(config.rotary ? config.head_dim : 0) {}

std::size_t KvCache::length() const { return *std::max_element(held_.begin(), held_.end()); }

std::size_t KvCache::slots_used(std::size_t n) const {
    const std::size_t start = oldest_slot(n);
    return start + held_[n] > config_.capacity ? config_.capacity : start + held_[n];
}

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

Status KvCache::append(const Shape& ks, const float* key, const Shape& vs, const float* value,
                       const std::int32_t* counts) {
    return append_rows(ks, key, vs, value, counts);
}

Status KvCache::append(const Shape& ks, const std::uint16_t* key, const Shape& vs, const std::uint16_t* value,
                       const std::int32_t* counts) {
    return append_rows(ks, key, vs, value, counts);
}

Status KvCache::check_append(const Shape& ks, const Shape& vs, const std::int32_t* counts) const {
    // Shapes are copied only on refusal: a valid append allocates nothing.
    const std::size_t B = config_.batch, H = config_.kv_heads, E = config_.head_dim, Ev = value_dim(), C = config_.capacity;
    if (ks.size() != 4 || vs.size() != 4 || ks[0] != B || ks[1] != H || ks[3] != E || vs[0] != B || vs[1] != H ||
        vs[3] != Ev || vs[2] != ks[2])
        return Status::fail(Function::kv_append, Message::cache_append_shape, {}, {num(B), num(H), num(E), num(Ev)}, {ks, vs});
    const std::size_t n = ks[2];
    if (n == 0) return Status::fail(Function::kv_append, Message::cache_append_empty, {}, {}, {ks, vs});
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t count = counts ? static_cast<std::size_t>(counts[b]) : n;
        if (counts && (counts[b] < 0 || count > n))
            return Status::fail(Function::kv_append, Message::cache_count_range, {Argument::counts},
                                {num(b), static_cast<double>(counts[b]), num(n)}, {ks, vs});
        if (config_.rolling && count > C)
            return Status::fail(Function::kv_append, Message::cache_append_rolling, {}, {num(count), num(C)}, {ks, vs});
        if (config_.rolling || count <= C - held_[b]) continue;
        if (counts && B > 1)
            return Status::fail(Function::kv_append, Message::cache_append_full_element, {},
                                {num(count), num(b), num(held_[b]), num(C)}, {ks, vs});
        return Status::fail(Function::kv_append, Message::cache_append_full, {}, {num(count), num(held_[b]), num(C)}, {ks, vs});
    }
    return {};
}

template <class T>
Status KvCache::append_rows(const Shape& ks, const T* key, const Shape& vs, const T* value, const std::int32_t* counts) {
    if (Status st = check_append(ks, vs, counts); !st.ok()) return st;
    const std::size_t B = config_.batch, H = config_.kv_heads, E = config_.head_dim, Ev = value_dim(), C = config_.capacity;
    const std::size_t n = ks[2];
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t count = counts ? static_cast<std::size_t>(counts[b]) : n;
        store(b, key + b * H * n * E, value + b * H * n * Ev, n, count);
        held_[b] = std::min(held_[b] + count, C);
        appended_[b] += count;
    }
    return {};
}

template <class T>
void KvCache::store(std::size_t b, const T* key, const T* value, std::size_t rows, std::size_t count) {
    // key (Hkv, rows, E) and value (Hkv, rows, Ev) of element b, float32 or halves: its first `count` rows, each at
    // its element's next position, into that position's slot.
    const auto widened = [](T x) {
        if constexpr (std::is_same_v<T, float>) return x;
        else return kernels::half_to_float(x);
    };
    const std::size_t H = config_.kv_heads, E = config_.head_dim, Ev = value_dim();
    const kernels::KvLayout lay = layout();
    const std::size_t evb = lay.evb();
    std::uint8_t* flags = position_flags() + b * config_.capacity;  // (capacity) the element's
    const auto put = [&](auto* keys, auto* values, auto convert, auto special) {
        for (std::size_t t = 0; t < count; ++t) {
            const std::size_t position = appended_[b] + t, at = slot(position);
            flags[at] = 0;
            for (std::size_t h = 0; h < H; ++h) {
                const std::size_t problem = b * H + h;
                auto* kd = keys + problem * lay.key_elements(config_.capacity);      // the problem's key blocks
                auto* vd = values + problem * lay.value_elements(config_.capacity);  // its value tiles
                const T* k = key + (h * rows + t) * E;     // (E) key of head h, new row t
                const T* v = value + (h * rows + t) * Ev;  // (Ev)
                if (config_.rotary) {  // turned by its position, in float32
                    for (std::size_t c = 0; c < E; ++c) turned_[c] = widened(k[c]);
                    rotate_row(*config_.rotary, E, static_cast<std::int64_t>(position), turned_.data(), turned_.data());
                }
                bool key_special = false, value_special = false;
                for (std::size_t c = 0; c < E; ++c) {
                    const auto x = convert(config_.rotary ? turned_[c] : widened(k[c]));
                    kd[lay.key_offset(at, c)] = x;
                    key_special |= special(x);
                }
                for (std::size_t c = 0; c < evb; ++c) {
                    const auto x = convert(c < Ev ? widened(v[c]) : 0.0f);
                    vd[lay.value_offset(at, c)] = x;
                    value_special |= special(x);
                }
                flags[at] |= (key_special ? 1u : 0u) | (value_special ? 2u : 0u);
            }
        }
    };
    if (config_.dtype == CacheDtype::float16)  // inf or NaN as stored: 65520 rounds to a half inf
        put(reinterpret_cast<std::uint16_t*>(key_storage()), reinterpret_cast<std::uint16_t*>(value_storage()),
            kernels::float_to_half, [](std::uint16_t x) { return (x & 0x7c00u) == 0x7c00u; });
    else
        put(reinterpret_cast<float*>(key_storage()), reinterpret_cast<float*>(value_storage()), [](float x) { return x; },
            [](float x) { return !std::isfinite(x); });
}

Status KvCache::truncate(std::size_t length) {
    for (std::size_t b = 0; b < config_.batch; ++b)
        if (length > appended_[b])
            return Status::fail(Function::kv_truncate, Message::cache_truncate_past, {Argument::length},
                                {num(length), num(appended_[b])});
    std::vector<std::size_t> lengths(config_.batch, length);
    return truncate(lengths.data());
}

Status KvCache::truncate(const std::size_t* lengths) {
    for (std::size_t b = 0; b < config_.batch; ++b) {
        if (lengths[b] > appended_[b])
            return Status::fail(Function::kv_truncate, Message::cache_truncate_element_past, {Argument::lengths},
                                {num(b), num(lengths[b]), num(appended_[b])});
        if (lengths[b] < appended_[b] - held_[b])
            return Status::fail(Function::kv_truncate, Message::cache_truncate_before_oldest, {Argument::lengths},
                                {num(b), num(lengths[b]), num(appended_[b] - held_[b])});
    }
    for (std::size_t b = 0; b < config_.batch; ++b) {
        held_[b] -= appended_[b] - lengths[b];
        appended_[b] = lengths[b];
    }
    return {};
}

namespace {
// out (problems, length, D): element c of key j of problem p, from its blocks at base + p · per_problem elements:
// offset at(p, j, c), or 0 where `held(p, j)` says key j is past what the problem's element holds; widened from
// float16 when `half`.
template <class At, class Held>
void gather(const unsigned char* base, bool half, std::size_t problems, std::size_t per_problem, std::size_t length,
            std::size_t D, At at, Held held, float* out) {
    for (std::size_t p = 0; p < problems; ++p)
        for (std::size_t j = 0; j < length; ++j)
            for (std::size_t c = 0; c < D; ++c) {
                float x = 0.0f;
                if (held(p, j)) {
                    const std::size_t i = p * per_problem + at(p, j, c);
                    x = half ? kernels::half_to_float(reinterpret_cast<const std::uint16_t*>(base)[i])
                             : reinterpret_cast<const float*>(base)[i];
                }
                out[(p * length + j) * D + c] = x;
            }
}
}  // namespace

void KvCache::copy_keys(float* out) const {
    const kernels::KvLayout lay = layout();
    const std::size_t H = config_.kv_heads, C = config_.capacity;
    gather(key_storage(), config_.dtype == CacheDtype::float16, config_.batch * H, lay.key_elements(C), length(),
           config_.head_dim,
           [&](std::size_t p, std::size_t j, std::size_t c) { return lay.key_offset(slot(oldest_slot(p / H) + j), c); },
           [&](std::size_t p, std::size_t j) { return j < held_[p / H]; }, out);
}

void KvCache::copy_values(float* out) const {
    const kernels::KvLayout lay = layout();
    const std::size_t H = config_.kv_heads, C = config_.capacity;
    gather(value_storage(), config_.dtype == CacheDtype::float16, config_.batch * H, lay.value_elements(C), length(),
           value_dim(),
           [&](std::size_t p, std::size_t j, std::size_t c) { return lay.value_offset(slot(oldest_slot(p / H) + j), c); },
           [&](std::size_t p, std::size_t j) { return j < held_[p / H]; }, out);
}

void KvCache::append(const xt::xarray<float>& key, const xt::xarray<float>& value, const std::vector<std::int32_t>& counts) {
    const Shape ks(key.shape().begin(), key.shape().end()), vs(value.shape().begin(), value.shape().end());
    if (!counts.empty() && counts.size() != config_.batch)
        throw std::invalid_argument(Status::fail(Function::kv_append, Message::per_element_count_b, {Argument::counts},
                                                 {num(counts.size()), num(config_.batch)}).message());
    if (Status st = append(ks, key.data(), vs, value.data(), counts.empty() ? nullptr : counts.data()); !st.ok())
        throw std::invalid_argument(st.message());
}

xt::xarray<float> KvCache::keys() const {
    xt::xarray<float> k = xt::xarray<float>::from_shape({config_.batch, config_.kv_heads, length(), config_.head_dim});
    copy_keys(k.data());
    return k;
}

xt::xarray<float> KvCache::values() const {
    xt::xarray<float> v = xt::xarray<float>::from_shape({config_.batch, config_.kv_heads, length(), value_dim()});
    copy_values(v.data());
    return v;
}

}  // namespace xattn
