// A key/value cache for incremental decoding: keys (B, Hkv, capacity, E) and values (B, Hkv, capacity, Ev) held
// between calls, appended a few positions at a time, and attended by query rows without copying them.
//
// attend(query (B, Hq, L, E)) equals scaled_dot_product_attention(query, K, V) on the held K (B, Hkv, length, E)
// and V (B, Hkv, length, Ev), with enable_gqa implied (Hq a multiple of Hkv), bottom-right alignment (the L queries
// are each element's last L positions, for prefill and decoding alike) and key_lengths the positions each element
// holds: the rules of xattn/sdpa.hpp (causal, window, ALiBi, soft-cap) count positions among the held keys.
//
// Each batch element appends and truncates on its own (onnxruntime GroupQueryAttention's seqlens_k): append takes
// how many of the n positions given each element keeps. A rolling cache (Mistral's rolling buffer) holds the last
// `capacity` positions of each element: an append past capacity overwrites the element's oldest positions, and its
// positions keep counting; with capacity = the window (left + 1 keys), decoding steps see exactly their window.
// A prefill of several rows into a rolled cache sees only what it still holds: its early rows lose the keys the
// same append overwrote, unless capacity >= window + rows − 1. The rotary option turns each key by its position
// (xattn/rotary.hpp) as it is appended, so a decoder appends raw projections.
//
// Storage is float32 or float16 (keys and values rounded to nearest even on append, widened in the kernel).
// Decoding steps (few rows, no weights, and L = 1 or not causal) stack the query heads that share a key/value head
// as rows of one problem, so each cached key and value is read once per step, by the few-rows kernel.
#pragma once

#include <cstdint>
#include <memory>

#include "xattn/dims.hpp"
#include "xattn/rotary.hpp"
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
    std::size_t capacity = 0;   // positions it can hold (per element)
    CacheDtype dtype = CacheDtype::float32;
    bool rolling = false;       // past capacity, an append overwrites the element's oldest positions
    std::optional<RotaryEmbedding> rotary;  // turn keys by their positions as they are appended
};

// The options of attend: SDPA's, without enable_gqa (implied), dropout (decoding is inference) and key lengths
// (the cache's own).
struct KvAttendSettings {
    bool is_causal = false;             // bottom-right: query l sees positions j <= l + length - L; with a mask too
    std::optional<double> scale;        // default 1/sqrt(E)
    bool need_weights = false;          // weights (B, Hq, L, length)
    double softcap = 0.0;               // > 0: scores = softcap · tanh(scores / softcap)
    AttentionWindow window;             // query l sees held positions p − left … p + right, p = l + length − L
    std::vector<float> alibi_slopes;    // empty, or one per query head (Hq)
    bool float16_io = false;            // query, output and weights as IEEE halves (the uint16 run_attend)
};

struct KvAttendOptions : KvAttendSettings {
    Mask attn_mask;  // broadcasts to (B, Hq, L, length); SDPA polarity (boolean true = may attend)
};

// An attend call planned at one state of the cache: run it before the next append or truncate.
struct KvAttendPlan {
    SdpaPlan sdpa;        // the attention as run: stacked (B, Hkv, G·L, E) or per head (B, Hq, L, E)
    SdpaPlan per_head;    // the call per head (B, Hq, L, E): it checks the mask, and its rules are the decoding kernel's
    bool stacked = false; // the G query heads of a key/value head are one problem's rows
    bool few_rows = false; // stacked, few rows and no weights: the decoding kernel runs it (else the tiled ones)
    std::size_t length = 0;  // the most positions an element holds (S)
    std::size_t slots = 0;   // slots the decoding kernel reads (S, or the capacity of a ring that rolled)
    std::vector<std::uint32_t> ring;  // (B, 2) where an element's ring rolled: its oldest key's slot and the slots used
    Shape output_shape;   // (B, Hq, L, Ev)
    Shape weights_shape;  // (B, Hq, L, length)
    bool float16_io = false;
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
    // The most positions any element holds (every element's, when they append together).
    std::size_t length() const;
    // Positions element n holds, and has appended in all (its next position: the same unless the cache rolled).
    std::size_t length(std::size_t n) const { return held_[n]; }
    std::size_t position(std::size_t n) const { return appended_[n]; }
    std::size_t capacity() const { return config_.capacity; }
    std::size_t value_dim() const { return config_.value_dim ? config_.value_dim : config_.head_dim; }

    // Appends n positions: key (B, Hkv, n, E), value (B, Hkv, n, Ev); with `counts` (B values in [0, n]), element b
    // appends only its first counts[b]. Refuses (appending nothing) a wrong shape or count, or more positions than
    // an element has room for (a rolling cache: more than capacity at once). Never throws, never allocates.
    Status append(const Shape& key_shape, const float* key, const Shape& value_shape, const float* value,
                  const std::int32_t* counts = nullptr);
    // append's refusals without the data: what it would refuse now.
    Status check_append(const Shape& key_shape, const Shape& value_shape, const std::int32_t* counts = nullptr) const;
    // The same from IEEE halves (uint16).
    Status append(const Shape& key_shape, const std::uint16_t* key, const Shape& value_shape,
                  const std::uint16_t* value, const std::int32_t* counts = nullptr);
    // Every element back to `length` positions appended (B values with `lengths`); refuses a length past an
    // element's, or, in a rolled cache, before the oldest position it still holds.
    Status truncate(std::size_t length);
    Status truncate(const std::size_t* lengths);
    // Copies of what is held, oldest first: keys (B, Hkv, length(), E), values (B, Hkv, length(), Ev), widened to
    // float32; zeros past an element's own length.
    void copy_keys(float* out) const;
    void copy_values(float* out) const;

    // Validates an attend call. Never throws.
    Status plan_attend(const Shape& query, MaskKind mask_kind, const Shape& mask_shape,
                       const KvAttendSettings& settings, KvAttendPlan* plan) const;
    // Runs a validated plan (made at this length); `weights` may be null without need_weights; `workspace`
    // holds plan.workspace_bytes. Allocates nothing and never throws.
    void run_attend(const KvAttendPlan& plan, const float* query, const MaskRef& mask, float* output,
                    float* weights, void* workspace) const;
    // A plan made with float16_io: query, output and weights as IEEE halves, computed in float32 in the workspace.
    void run_attend(const KvAttendPlan& plan, const std::uint16_t* query, const MaskRef& mask, std::uint16_t* output,
                    std::uint16_t* weights, void* workspace) const;

    // The xtensor API: throws std::invalid_argument naming the argument and the shapes.
    void append(const xt::xarray<float>& key, const xt::xarray<float>& value, const std::vector<std::int32_t>& counts = {});
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
    std::size_t slot(std::size_t position) const { return config_.rolling ? position % config_.capacity : position; }
    // Element n's ring: the slot of its oldest key, and the slots from 0 that hold its keys.
    std::size_t oldest_slot(std::size_t n) const { return slot(appended_[n] - held_[n]); }
    std::size_t slots_used(std::size_t n) const;
    template <class T>
    Status append_rows(const Shape& key_shape, const T* key, const Shape& value_shape, const T* value,
                       const std::int32_t* counts);
    template <class T>
    void store(std::size_t n, const T* key, const T* value, std::size_t rows, std::size_t count);
    Status plan_problems(const Shape& q, MaskKind mask_kind, const Shape& mask_shape, const KvAttendSettings& s,
                         KvAttendPlan* p) const;

    KvCacheConfig config_;
    // keys, then values, each problem's in the blocks of kernels/kv_layout.hpp (capacity padded to whole value
    // tiles, values' rows to a multiple of 16), then per element and slot (B, capacity) a byte saying whether
    // its key (bit 0) or a value (bit 1) there is inf or NaN: the decoding kernel's shortcut.
    Storage storage_;
    std::vector<std::size_t> held_;      // (B) positions each element holds
    std::vector<std::size_t> appended_;  // (B) positions each element has appended in all
    std::vector<float> turned_;          // (E) with a rotary option: a key row turned by its position
};

}  // namespace xattn
