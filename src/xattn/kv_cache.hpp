// A key/value cache for incremental decoding: keys (B, Hkv, capacity, E) and values (B, Hkv, capacity, Ev)
// held between calls, appended a few positions at a time, and attended by query rows without copying them.
//
// attend(query (B, Hq, L, E)) equals scaled_dot_product_attention(query, K, V) on the held K (B, Hkv, length, E)
// and V (B, Hkv, length, Ev), with enable_gqa implied (Hq a multiple of Hkv) and is_causal meaning the
// bottom-right alignment: the L queries are the last L positions, for prefill and decoding alike.
//
// Storage is float32 or float16 (keys and values rounded to nearest even on append, widened in the kernel).
// Decoding steps (no mask, and L = 1 or not causal) stack the query heads that share a key/value head as rows
// of one problem, so each cached key and value is read once per step, by the few-rows kernel.
#pragma once

#include <cstdint>
#include <memory>

#include "xattn/dims.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/xarray.hpp"

namespace xattn {
namespace kernels {
struct KvLayout;
}

// How a cache stores keys and values: float16 halves the memory and the bytes a step reads.
enum class CacheDtype { float32, float16 };

// A cache's shape; its whole storage is taken at creation (storage_bytes).
struct KvCacheConfig {
    std::size_t batch = 1;      // B
    std::size_t kv_heads = 0;   // Hkv
    std::size_t head_dim = 0;   // E
    std::size_t value_dim = 0;  // Ev (0 = head_dim)
    std::size_t capacity = 0;   // positions it can hold
    CacheDtype dtype = CacheDtype::float32;
};

// The options of attend: SDPA's, without enable_gqa (implied) and dropout (decoding is inference).
struct KvAttendSettings {
    bool is_causal = false;             // bottom-right: query l sees positions j <= l + length - L
    std::optional<double> scale;        // default 1/sqrt(E)
    bool need_weights = false;          // weights (B, Hq, L, length)
};

struct KvAttendOptions : KvAttendSettings {
    Mask attn_mask;  // broadcasts to (B, Hq, L, length); SDPA polarity (boolean true = may attend)
};

struct KvAttendPlan {
    SdpaPlan sdpa;        // the attention as planned: stacked (B, Hkv, G·L, E) or per head (B, Hq, L, E)
    bool stacked = false; // the G query heads of a key/value head are one problem's rows
    bool few_rows = false; // stacked, few rows and no weights: the decoding kernel runs it (else the tiled ones)
    SdpaPlan mask_plan;   // a masked stacked call: the per-head plan, which checks the mask and places its rows
    std::size_t length = 0;
    Shape output_shape;   // (B, Hq, L, Ev)
    Shape weights_shape;  // (B, Hq, L, length)
    std::uint64_t workspace_bytes = 0;
};

class KvCache {
public:
    static Status check_config(const KvCacheConfig& config);
    // Bytes of storage a valid configuration takes: keys, values and a flag byte per position, one allocation.
    static std::uint64_t storage_bytes(const KvCacheConfig& config);
    // Builds a cache without throwing: its storage that cannot be allocated is an error (the wasm bindings).
    static Status create(const KvCacheConfig& config, std::unique_ptr<KvCache>* out);
    // Throws std::invalid_argument for a bad configuration (std::bad_alloc if it cannot be allocated).
    explicit KvCache(const KvCacheConfig& config);

    const KvCacheConfig& config() const { return config_; }
    std::size_t length() const { return length_; }
    std::size_t capacity() const { return config_.capacity; }
    std::size_t value_dim() const { return config_.value_dim ? config_.value_dim : config_.head_dim; }

    // Appends n positions: key (B, Hkv, n, E), value (B, Hkv, n, Ev). Refuses (appending nothing) a wrong
    // shape or more positions than capacity - length. Never throws, never allocates.
    Status append(const Shape& key_shape, const float* key, const Shape& value_shape, const float* value);
    // append's refusals without the data: what it would refuse now.
    Status check_append(const Shape& key_shape, const Shape& value_shape) const;
    // Drops positions >= length; refuses a length past the one held.
    Status truncate(std::size_t length);
    // Copies of what is held: keys (B, Hkv, length, E), values (B, Hkv, length, Ev), widened to float32.
    void copy_keys(float* out) const;
    void copy_values(float* out) const;

    // Validates an attend call. Never throws.
    Status plan_attend(const Shape& query, MaskKind mask_kind, const Shape& mask_shape,
                       const KvAttendSettings& settings, KvAttendPlan* plan) const;
    // Runs a validated plan (made at this length); `weights` may be null without need_weights; `workspace`
    // holds plan.workspace_bytes. Allocates nothing and never throws.
    void run_attend(const KvAttendPlan& plan, const float* query, const MaskRef& mask, float* output,
                    float* weights, void* workspace) const;

    // The xtensor API: throws std::invalid_argument naming the argument and the shapes.
    void append(const xt::xarray<float>& key, const xt::xarray<float>& value);
    AttentionResult attend(const xt::xarray<float>& query, const KvAttendOptions& options = {}) const;
    xt::xarray<float> keys() const;
    xt::xarray<float> values() const;

private:
    struct FreeBytes {
        void operator()(unsigned char* p) const { std::free(p); }
    };
    using Storage = std::unique_ptr<unsigned char[], FreeBytes>;
    KvCache(const KvCacheConfig& config, Storage storage);
    std::size_t element_bytes() const { return config_.dtype == CacheDtype::float16 ? 2 : 4; }
    kernels::KvLayout layout() const;
    // The key blocks and value tiles of problem 0 (b · Hkv + h = 0; kernels/kv_layout.hpp), the other problems'
    // following theirs, layout().key_elements(capacity) and value_elements(capacity) elements apart.
    unsigned char* key_storage() const;
    unsigned char* value_storage() const;
    std::uint8_t* position_flags() const;

    KvCacheConfig config_;
    // keys, then values, each problem's in the blocks of kernels/kv_layout.hpp (capacity padded to whole value
    // tiles, values' rows to a multiple of 16), then per position (capacity) a byte saying whether
    // some key (bit 0) or value (bit 1) stored there is inf or NaN: the decoding kernel's shortcut.
    Storage storage_;
    std::size_t length_ = 0;
};

}  // namespace xattn
