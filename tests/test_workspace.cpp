// The no-allocation contract of the raw layer: a plan states the exact scratch its run uses
// (plan.workspace_bytes), and run_sdpa, run_sdpa_backward and MultiheadAttention::run_forward allocate
// nothing else. The wasm bindings rely on it: in WebAssembly a failed allocation inside a run would
// abort the module, so the JS side allocates exactly what the plan says before it runs.
//
// Checked two ways: a counting global operator new (every std::vector, string or xtensor buffer goes
// through it) must see no allocation during a run; and the workspace sits between guard bytes, with the
// run's results compared with those of the allocating entry points. Under AddressSanitizer the
// exact-size workspace also turns any read or write past the stated size into a reported error.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>


#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "random_inputs.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
    if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using xattn::MaskKind;
using xattn::Shape;

// Counts the allocations `fn` makes.
template <class F>
long allocations_during(F&& fn) {
    allocations = 0;
    counting = true;
    fn();
    counting = false;
    return allocations.load();
}

// A workspace of exactly `bytes`, with guard bytes on both sides that a run must leave alone.
struct GuardedWorkspace {
    static constexpr std::size_t kGuard = 256;
    static constexpr unsigned char kFill = 0xA5;
    std::vector<unsigned char> storage;
    std::size_t bytes;
    explicit GuardedWorkspace(std::size_t n) : storage(n + 2 * kGuard, kFill), bytes(n) {}
    void* data() { return storage.data() + kGuard; }
    bool guards_intact() const {
        for (std::size_t i = 0; i < kGuard; ++i)
            if (storage[i] != kFill || storage[kGuard + bytes + i] != kFill) return false;
        return true;
    }
};

using test_inputs::randn;

Shape shape_of(const xt::xarray<float>& a) { return Shape(a.shape().begin(), a.shape().end()); }

bool same(const std::vector<float>& a, const xt::xarray<float>& b) {
    if (a.size() != b.size()) return false;
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct SdpaCase {
    const char* name;
    Shape q, k, v;
    bool need_weights, causal, gqa;
    MaskKind mask;
};

const SdpaCase kSdpaCases[] = {
    {"streaming", {2, 3, 37, 16}, {2, 3, 53, 16}, {2, 3, 53, 24}, false, false, false, MaskKind::none},
    {"weights", {2, 3, 37, 16}, {2, 3, 53, 16}, {2, 3, 53, 24}, true, false, false, MaskKind::none},
    {"causal", {1, 2, 70, 8}, {1, 2, 70, 8}, {1, 2, 70, 8}, false, true, false, MaskKind::none},
    {"bool mask", {2, 4, 19, 8}, {2, 4, 33, 8}, {2, 4, 33, 8}, false, false, false, MaskKind::boolean},
    {"float mask + weights", {2, 4, 19, 8}, {2, 4, 33, 8}, {2, 4, 33, 8}, true, false, false, MaskKind::additive},
    {"gqa", {1, 6, 9, 8}, {1, 2, 130, 8}, {1, 2, 130, 8}, false, false, true, MaskKind::none},
    {"one query row", {1, 1, 1, 64}, {1, 1, 1000, 64}, {1, 1, 1000, 64}, false, false, false, MaskKind::none},
    // A head this wide passes the SIMD kernels' 64 MiB scratch bound (Qᵀ panels of 16 queries): the row
    // kernel runs, in S floats.
    {"row kernel (E = 1200000)", {1, 2, 1200000}, {1, 3, 1200000}, {1, 3, 2}, false, false, false, MaskKind::none},
};

}  // namespace

TEST_CASE("workspace: run_sdpa allocates nothing and stays inside the planned workspace") {
    for (const auto& c : kSdpaCases)
        for (const auto* set : xattn::kernels::available_kernels()) {
            CAPTURE(c.name);
            CAPTURE(set->name);
            xattn::kernels::use_kernels(set);
            const auto q = randn(c.q, 1), k = randn(c.k, 2), v = randn(c.v, 3);
            xattn::SdpaOptions o;
            o.need_weights = c.need_weights;
            o.is_causal = c.causal;
            o.enable_gqa = c.gqa;
            Shape mask_shape{c.q[c.q.size() - 2], c.k[c.k.size() - 2]};
            if (c.mask == MaskKind::boolean) o.attn_mask = xattn::Mask::boolean(randn(mask_shape, 4) > -1.0f);
            if (c.mask == MaskKind::additive) o.attn_mask = xattn::Mask::additive(randn(mask_shape, 4));
            const auto want = xattn::scaled_dot_product_attention(q, k, v, o);  // allocates its own workspace

            const xattn::MaskRef mask = o.attn_mask.ref();
            xattn::SdpaPlan plan;
            REQUIRE(xattn::plan_sdpa(shape_of(q), shape_of(k), shape_of(v), mask.kind, mask.shape, o, &plan).ok());
            std::vector<float> out(xattn::numel(plan.output_shape));
            std::vector<float> weights(c.need_weights ? xattn::numel(plan.weights_shape) : 0);
            GuardedWorkspace ws(plan.workspace_bytes);
            const long n = allocations_during([&] {
                xattn::run_sdpa(plan, q.data(), k.data(), v.data(), mask, out.data(),
                                c.need_weights ? weights.data() : nullptr, ws.data());
            });
            CHECK(n == 0);
            CHECK(ws.guards_intact());
            CHECK(same(out, want.output));
            if (c.need_weights) CHECK(same(weights, want.weights));
        }
    xattn::kernels::use_kernels(nullptr);
}

TEST_CASE("workspace: the planned bytes are tight: the scratch a run uses is within 1 KiB of them") {
    // A plan that over-states its needs would refuse calls that fit: the run must touch (nearly) all of it.
    const auto q = randn({2, 3, 37, 16}, 1), k = randn({2, 3, 53, 16}, 2), v = randn({2, 3, 53, 24}, 3);
    xattn::SdpaPlan plan;
    REQUIRE(xattn::plan_sdpa(shape_of(q), shape_of(k), shape_of(v), MaskKind::none, {}, {}, &plan).ok());
    REQUIRE(plan.workspace_bytes > 0);
    GuardedWorkspace ws(plan.workspace_bytes);
    std::vector<float> out(xattn::numel(plan.output_shape));
    xattn::run_sdpa(plan, q.data(), k.data(), v.data(), {}, out.data(), nullptr, ws.data());
    std::size_t last_written = 0;
    const auto* bytes = static_cast<const unsigned char*>(ws.data());
    for (std::size_t i = 0; i < ws.bytes; ++i)
        if (bytes[i] != GuardedWorkspace::kFill) last_written = i;
    CHECK(last_written + 1024 >= plan.workspace_bytes);
}

TEST_CASE("workspace: run_sdpa_backward allocates nothing, on the blocked and on the row path") {
    const auto q = randn({2, 2, 21, 8}, 5), k = randn({2, 2, 34, 8}, 6), v = randn({2, 2, 34, 12}, 7);
    const auto dO = randn({2, 2, 21, 12}, 8);
    for (const bool finite : {true, false}) {
        CAPTURE(finite);
        auto key = k;
        if (!finite) key(0, 1, 3, 2) = std::numeric_limits<float>::quiet_NaN();  // sends it to the row path
        xattn::SdpaOptions o;
        o.is_causal = true;
        o.causal_alignment = xattn::CausalAlignment::bottom_right;
        const auto want = xattn::scaled_dot_product_attention_backward(q, key, v, dO, o);
        xattn::SdpaPlan plan;
        REQUIRE(xattn::plan_sdpa_backward(shape_of(q), shape_of(key), shape_of(v), shape_of(dO), MaskKind::none, {}, o,
                                          &plan)
                    .ok());
        std::vector<float> out(q.size() / 8 * 12), dq(q.size()), dk(key.size()), dv(v.size());
        GuardedWorkspace ws(plan.workspace_bytes);
        const long n = allocations_during([&] {
            xattn::run_sdpa_backward(plan, q.data(), key.data(), v.data(), {}, dO.data(), out.data(), dq.data(),
                                     dk.data(), dv.data(), nullptr, ws.data());
        });
        CHECK(n == 0);
        CHECK(ws.guards_intact());
        CHECK(same(out, want.output));
        CHECK(same(dq, want.grad_query));
        CHECK(same(dk, want.grad_key));
        CHECK(same(dv, want.grad_value));
    }
}

TEST_CASE("workspace: MultiheadAttention::run_forward allocates nothing, with masks, bias_kv and weights") {
    xattn::MhaConfig cfg;
    cfg.embed_dim = 24;
    cfg.num_heads = 3;
    cfg.kdim = 10;
    cfg.add_bias_kv = true;
    cfg.add_zero_attn = true;
    cfg.init_seed = 3;
    const xattn::MultiheadAttention mha(cfg);
    const std::size_t L = 7, S = 11, N = 2;
    const auto q = randn({L, N, 24}, 9), k = randn({S, N, 10}, 10), v = randn({S, N, 24}, 11);
    for (const bool need_weights : {true, false})
        for (const bool average : {true, false})
            for (const bool causal : {true, false}) {
                CAPTURE(need_weights);
                CAPTURE(average);
                CAPTURE(causal);
                xattn::MhaForwardOptions o;
                o.need_weights = need_weights;
                o.average_attn_weights = average;
                o.is_causal = causal;
                o.key_padding_mask = xattn::Mask::boolean(randn({N, S}, 12) > 1.0f);
                const auto want = mha.forward(q, k, v, o);
                const xattn::MhaMasks masks{o.key_padding_mask.ref(), o.attn_mask.ref()};
                xattn::MhaPlan plan;
                REQUIRE(mha.plan_forward(shape_of(q), shape_of(k), shape_of(v), masks.key_padding_mask.kind,
                                         masks.key_padding_mask.shape, masks.attn_mask.kind, masks.attn_mask.shape, o,
                                         &plan)
                            .ok());
                std::vector<float> out(xattn::numel(plan.output_shape));
                std::vector<float> weights(need_weights ? xattn::numel(plan.weights_shape) : 0);
                GuardedWorkspace ws(plan.workspace_bytes);
                const long n = allocations_during([&] {
                    mha.run_forward(plan, q.data(), k.data(), v.data(), masks, out.data(),
                                    need_weights ? weights.data() : nullptr, ws.data());
                });
                CHECK(n == 0);
                CHECK(ws.guards_intact());
                CHECK(same(out, want.output));
                if (need_weights) CHECK(same(weights, want.weights));
            }
}

TEST_CASE("workspace: MultiheadAttention::run_backward allocates nothing, with masks, dropout and bias_kv") {
    xattn::MhaConfig cfg;
    cfg.embed_dim = 12;
    cfg.num_heads = 3;
    cfg.vdim = 5;
    cfg.add_bias_kv = true;
    cfg.dropout = 0.2;
    cfg.batch_first = true;
    cfg.init_seed = 4;
    const xattn::MultiheadAttention mha(cfg);
    const std::size_t L = 6, S = 9, N = 2;
    const auto q = randn({N, L, 12}, 21), k = randn({N, S, 12}, 22), v = randn({N, S, 5}, 23), dO = randn({N, L, 12}, 24);
    for (const bool causal : {true, false}) {
        CAPTURE(causal);
        xattn::MhaForwardOptions o;
        o.is_causal = causal;
        o.training = true;
        o.seed = 9;
        o.key_padding_mask = xattn::Mask::additive(randn({N, S}, 25));
        const auto want = mha.backward(q, k, v, dO, o);
        const xattn::MhaMasks masks{o.key_padding_mask.ref(), o.attn_mask.ref()};
        xattn::MhaPlan plan;
        REQUIRE(mha.plan_backward(shape_of(q), shape_of(k), shape_of(v), shape_of(dO), masks.key_padding_mask.kind,
                                  masks.key_padding_mask.shape, masks.attn_mask.kind, masks.attn_mask.shape, o, &plan)
                    .ok());
        std::vector<float> out(q.size()), dq(q.size()), dk(k.size()), dv(v.size()), dp(mha.parameter_floats());
        GuardedWorkspace ws(plan.workspace_bytes);
        const long n = allocations_during([&] {
            mha.run_backward(plan, q.data(), k.data(), v.data(), masks, dO.data(), out.data(), dq.data(), dk.data(),
                             dv.data(), dp.data(), ws.data());
        });
        CHECK(n == 0);
        CHECK(ws.guards_intact());
        CHECK(same(out, want.output));
        CHECK(same(dq, want.grad_query));
        CHECK(same(dk, want.grad_key));
        CHECK(same(dv, want.grad_value));
        const auto& dw = want.grad_parameters.at("v_proj_weight");
        CHECK(std::equal(dw.begin(), dw.end(), dp.begin() + mha.find_parameter("v_proj_weight")->offset));
    }
}

TEST_CASE("workspace: TransformerEncoderLayer's runs, linear's and layer_norm's allocate nothing") {
    xattn::EncoderLayerConfig cfg;
    cfg.d_model = 12, cfg.nhead = 3, cfg.dim_feedforward = 70, cfg.dropout = 0.2, cfg.init_seed = 5;
    cfg.activation = xattn::Activation::gelu;
    const std::size_t L = 9, N = 2;
    const auto src = randn({L, N, 12}, 31), dy = randn({L, N, 12}, 32);
    for (const bool norm_first : {false, true}) {
        CAPTURE(norm_first);
        cfg.norm_first = norm_first;
        const xattn::TransformerEncoderLayer layer(cfg);
        xattn::EncoderLayerOptions o;
        o.is_causal = true, o.training = true, o.seed = 3;
        o.src_key_padding_mask = xattn::Mask::additive(randn({N, L}, 33));
        const auto want = layer.backward(src, dy, o);
        const xattn::EncoderLayerMasks masks{o.src_mask.ref(), o.src_key_padding_mask.ref()};
        xattn::EncoderLayerPlan fwd, bwd;
        REQUIRE(layer.plan_forward(shape_of(src), masks.src_mask.kind, masks.src_mask.shape,
                                   masks.src_key_padding_mask.kind, masks.src_key_padding_mask.shape, o, &fwd).ok());
        REQUIRE(layer.plan_backward(shape_of(src), shape_of(dy), masks.src_mask.kind, masks.src_mask.shape,
                                    masks.src_key_padding_mask.kind, masks.src_key_padding_mask.shape, o, &bwd).ok());
        std::vector<float> out(src.size()), out2(src.size()), dsrc(src.size());
        std::vector<float> dp(layer.parameter_floats(), NAN);  // every gradient must be written
        GuardedWorkspace wf(fwd.workspace_bytes), wb(bwd.workspace_bytes);
        CHECK(allocations_during([&] { layer.run_forward(fwd, src.data(), masks, out.data(), wf.data()); }) == 0);
        CHECK(allocations_during([&] {
                  layer.run_backward(bwd, src.data(), masks, dy.data(), out2.data(), dsrc.data(), dp.data(), wb.data());
              }) == 0);
        CHECK(wf.guards_intact());
        CHECK(wb.guards_intact());
        CHECK(same(out, want.output));
        CHECK(same(out2, want.output));
        CHECK(same(dsrc, want.grad_src));
        for (const xattn::ParameterInfo& p : layer.parameters()) {
            const auto& dw = want.grad_parameters.at(p.name);
            CHECK_MESSAGE(std::equal(dw.begin(), dw.end(), dp.begin() + p.offset), p.name);
        }
    }
    // linear and layer_norm, backward (their forward's workspace is part of it).
    const auto x = randn({70, 33}, 34), w = randn({20, 33}, 35), b = randn({20}, 36), g = randn({70, 20}, 37);
    const Shape bs = shape_of(b);
    xattn::LinearPlan lp;
    REQUIRE(xattn::plan_linear_backward(shape_of(x), shape_of(w), &bs, shape_of(g), &lp).ok());
    std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
    GuardedWorkspace wl(lp.workspace_bytes);
    CHECK(allocations_during([&] {
              xattn::run_linear_backward(lp, x.data(), w.data(), g.data(), dx.data(), dw.data(), db.data(), wl.data());
          }) == 0);
    CHECK(wl.guards_intact());
    CHECK(same(dw, xattn::linear_backward(x, w, b, g).grad_weight));
    xattn::LayerNormPlan np;
    const Shape ns{33};
    REQUIRE(xattn::plan_layer_norm_backward(shape_of(x), ns, &ns, &ns, 1e-5, shape_of(x), &np).ok());
    const auto nw = randn({33}, 38), nb = randn({33}, 39);
    std::vector<float> gx(x.size()), gw(33), gb(33);
    GuardedWorkspace wn(np.workspace_bytes);
    CHECK(allocations_during([&] {
              xattn::run_layer_norm_backward(np, x.data(), nw.data(), x.data(), gx.data(), gw.data(), gb.data(), wn.data());
          }) == 0);
    CHECK(wn.guards_intact());
}

TEST_CASE("workspace: KvCache append and run_attend allocate nothing, float32 and float16") {
    for (const auto dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
        xattn::KvCacheConfig cfg;
        cfg.batch = 1, cfg.kv_heads = 2, cfg.head_dim = 16, cfg.capacity = 64, cfg.dtype = dtype;
        xattn::KvCache cache(cfg);
        const auto k = randn({1, 2, 30, 16}, 31), v = randn({1, 2, 30, 16}, 32);
        const xattn::Shape ks = shape_of(k), vs = shape_of(v);
        bool appended = false;
        CHECK(allocations_during([&] { appended = cache.append(ks, k.data(), vs, v.data()).ok(); }) == 0);
        CHECK(appended);
        for (const std::size_t L : {1, 5}) {
            const auto q = randn({1, 8, L, 16}, 33);
            xattn::KvAttendOptions o;
            o.is_causal = true;
            const auto want = cache.attend(q, o);
            xattn::KvAttendPlan plan;
            REQUIRE(cache.plan_attend(shape_of(q), xattn::MaskKind::none, {}, o, &plan).ok());
            std::vector<float> out(xattn::numel(plan.output_shape));
            GuardedWorkspace ws(plan.workspace_bytes);
            CHECK(allocations_during([&] { cache.run_attend(plan, q.data(), {}, out.data(), nullptr, ws.data()); }) == 0);
            CHECK(ws.guards_intact());
            CHECK(same(out, want.output));
        }
    }
}

TEST_CASE("workspace: the rules, returned scores and float16 I/O allocate nothing and stay inside the plan") {
    const auto q = randn({2, 4, 37, 16}, 41), k = randn({2, 2, 90, 16}, 42), v = randn({2, 2, 90, 8}, 43);
    const auto dO = randn({2, 4, 37, 8}, 44);
    xattn::SdpaOptions o;
    o.enable_gqa = true, o.is_causal = true, o.causal_alignment = xattn::CausalAlignment::bottom_right;
    o.softcap = 3.0, o.window = {20, -1}, o.alibi_slopes = {0.5f, 0.25f, 0.1f, 0.05f}, o.key_lengths = {90, 61};
    o.return_scores = xattn::ScoresStage::biased;
    for (const auto* set : xattn::kernels::available_kernels())
        for (const bool half : {false, true}) {
            CAPTURE(set->name);
            CAPTURE(half);
            xattn::kernels::use_kernels(set);
            o.float16_io = half;
            xattn::SdpaPlan plan, back;
            REQUIRE(xattn::plan_sdpa(shape_of(q), shape_of(k), shape_of(v), MaskKind::none, {}, o, &plan).ok());
            REQUIRE(xattn::plan_sdpa_backward(shape_of(q), shape_of(k), shape_of(v), shape_of(dO), MaskKind::none, {}, o,
                                              &back).ok());
            GuardedWorkspace ws(plan.workspace_bytes), wb(back.workspace_bytes);
            std::vector<float> out(dO.size()), scores(xattn::numel(plan.weights_shape)), dq(q.size()), dk(k.size()),
                dv(v.size());
            std::vector<std::uint16_t> h(q.size() + 2 * k.size() + 2 * dO.size() + scores.size() + 2 * v.size());
            const auto runs = [&] {
                if (half) {  // the values do not matter here, only where the runs read and write
                    std::uint16_t* x = h.data();
                    xattn::run_sdpa(plan, x, x, x, {}, x + q.size(), nullptr, ws.data(), x + q.size() + dO.size());
                    xattn::run_sdpa_backward(back, x, x, x, {}, x, x + q.size(), x + q.size() + dO.size(),
                                             x + q.size() + dO.size() + k.size(), x + q.size() + dO.size() + 2 * k.size(),
                                             nullptr, wb.data());
                } else {
                    xattn::run_sdpa(plan, q.data(), k.data(), v.data(), {}, out.data(), nullptr, ws.data(), scores.data());
                    xattn::run_sdpa_backward(back, q.data(), k.data(), v.data(), {}, dO.data(), out.data(), dq.data(),
                                             dk.data(), dv.data(), nullptr, wb.data());
                }
            };
            // The first call big enough to split starts the thread pool (its threads are allocated once per
            // process); the runs after it must allocate nothing.
            runs();
            const long n = allocations_during(runs);
            CHECK(n == 0);
            CHECK(ws.guards_intact());
            CHECK(wb.guards_intact());
        }
    xattn::kernels::use_kernels(nullptr);
    // The cache: per-element counts into a rolling ring, its rules on attend (decoding and tiled), float16 I/O.
    xattn::KvCacheConfig cfg;
    cfg.batch = 2, cfg.kv_heads = 2, cfg.head_dim = 16, cfg.capacity = 70, cfg.rolling = true;
    cfg.rotary = xattn::RotaryEmbedding{};
    xattn::KvCache cache(cfg);
    const auto ck = randn({2, 2, 50, 16}, 45);
    const std::int32_t counts[2] = {50, 31};
    const Shape cs = shape_of(ck);
    for (int step = 0; step < 2; ++step) {
        bool appended = false;
        CHECK(allocations_during([&] { appended = cache.append(cs, ck.data(), cs, ck.data(), counts).ok(); }) == 0);
        CHECK(appended);
    }
    for (const std::size_t L : {1, 3})
        for (const bool weights : {false, true})
            for (const bool half : {false, true}) {
                const auto cq = randn({2, 4, L, 16}, 46);
                xattn::KvAttendOptions ko;
                ko.is_causal = true, ko.window = {40, -1}, ko.alibi_slopes = {0.5f, 0.25f, 0.1f, 0.05f}, ko.softcap = 2.0;
                ko.need_weights = weights, ko.float16_io = half;
                xattn::KvAttendPlan plan;
                REQUIRE(cache.plan_attend(shape_of(cq), MaskKind::none, {}, ko, &plan).ok());
                GuardedWorkspace ws(plan.workspace_bytes);
                std::vector<float> out(xattn::numel(plan.output_shape)), w(xattn::numel(plan.weights_shape));
                std::vector<std::uint16_t> hq(cq.size()), hout(out.size()), hw(w.size());
                const long n = allocations_during([&] {
                    if (half) cache.run_attend(plan, hq.data(), {}, hout.data(), weights ? hw.data() : nullptr, ws.data());
                    else cache.run_attend(plan, cq.data(), {}, out.data(), weights ? w.data() : nullptr, ws.data());
                });
                CHECK(n == 0);
                CHECK(ws.guards_intact());
            }
}
