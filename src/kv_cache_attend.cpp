// The KV cache's attend: SDPA's rules on what each element holds, planned per head (which checks everything) and run
// on the decoding kernel (few rows: the query heads of a key/value head stacked as rows of one problem, each row
// under its own head's rules) or on the tiled kernels, which read the cache's blocks in place (float16 storage
// widened tile by tile; a rolled ring's keys gathered oldest first), never copying the cached keys and values.
#include <algorithm>
#include <stdexcept>

#include "half_io.hpp"
#include "kernels/kernels.hpp"
#include "kernels/kv_layout.hpp"
#include "sdpa_kernels.hpp"
#include "xattn/kv_cache.hpp"

namespace xattn {
namespace {

constexpr Function kFn = Function::kv_attend;
// Stacked query rows up to this many (without weights) take the decoding kernel; more fill the wide tiles.
constexpr std::size_t kFewRows = 16;

double num(std::size_t n) { return static_cast<double>(n); }

}  // namespace

Status KvCache::plan_problems(const Shape& q, MaskKind mask_kind, const Shape& mask_shape, const KvAttendSettings& s,
                              KvAttendPlan* p) const {
    const std::size_t B = config_.batch, Hkv = config_.kv_heads, E = config_.head_dim, Ev = value_dim();
    const std::size_t Hq = q[1], L = q[2], G = Hq / Hkv, S = length();
    // Each element's keys are the positions it holds: key lengths where they differ, or where a ring rolled (its
    // slots are then not its keys).
    bool rolled = false, uneven = false;
    for (std::size_t b = 0; b < B; ++b) {
        rolled |= oldest_slot(b) != 0 || slots_used(b) != held_[b];
        uneven |= held_[b] != S;
    }
    SdpaSettings per_head;
    per_head.scale = s.scale;
    per_head.need_weights = s.need_weights;
    per_head.softcap = s.softcap;
    if (rolled || uneven)
        for (std::size_t b = 0; b < B; ++b) per_head.key_lengths.push_back(static_cast<std::int32_t>(held_[b]));
    SdpaSettings stacked = per_head;  // what a stacked problem's rows share
    per_head.is_causal = s.is_causal;
    per_head.causal_alignment = CausalAlignment::bottom_right;
    per_head.enable_gqa = true;
    per_head.window = s.window;
    per_head.alibi_slopes = s.alibi_slopes;
    if (Status st = plan_sdpa(q, {B, Hkv, S, E}, {B, Hkv, S, Ev}, mask_kind, mask_shape, per_head, &p->per_head); !st.ok())
        return st;
    // Decoding: the G query heads of a key/value head as G·L rows of one problem, each key read once. With L = 1
    // the causal rule hides nothing and every row sits at the same position. The decoding kernel gives each row
    // its own head's rules (mask, window, ALiBi); the tiled kernels take stacked rows only where those are alike.
    const bool alike = (L == 1 || !s.is_causal);
    const bool few = G * L <= kFewRows && !s.need_weights;
    const bool positioned = s.window.left >= 0 || s.window.right >= 0 || !s.alibi_slopes.empty();
    p->few_rows = alike && few;
    p->stacked = p->few_rows || (alike && !positioned && mask_kind == MaskKind::none);
    if (!p->stacked) {
        p->sdpa = p->per_head;
        return {};
    }
    return plan_sdpa({B, Hkv, G * L, E}, {B, Hkv, S, E}, {B, Hkv, S, Ev}, MaskKind::none, {}, stacked, &p->sdpa);
}

Status KvCache::plan_attend(const Shape& q, MaskKind mask_kind, const Shape& mask_shape,
                            const KvAttendSettings& s, KvAttendPlan* plan) const {
    const std::size_t B = config_.batch, Hkv = config_.kv_heads, E = config_.head_dim, Ev = value_dim();
    if (q.size() != 4 || q[0] != B || q[3] != E || q[1] == 0 || q[1] % Hkv != 0)
        return Status::fail(kFn, Message::cache_query_shape, {}, {num(B), num(E), num(Hkv)}, {q});
    const std::size_t Hq = q[1], L = q[2], S = length();
    if (Status st = check_rule_settings(kFn, s.softcap, s.window); !st.ok()) return st;
    if (!s.alibi_slopes.empty() && s.alibi_slopes.size() != Hq)
        return Status::fail(kFn, Message::per_head_count, {Argument::alibi_slopes}, {num(s.alibi_slopes.size()), num(Hq)}, {q});
    KvAttendPlan p;
    if (Status st = plan_problems(q, mask_kind, mask_shape, s, &p); !st.ok()) return st.as(kFn);  // SDPA's, as the cache's
    p.length = S;
    p.slots = S;
    bool rolled = false;
    for (std::size_t b = 0; b < B; ++b) rolled |= oldest_slot(b) != 0 || slots_used(b) != held_[b];
    if (rolled)
        for (std::size_t b = 0; b < B; ++b) {
            p.ring.push_back(static_cast<std::uint32_t>(oldest_slot(b)));
            p.ring.push_back(static_cast<std::uint32_t>(slots_used(b)));
            p.slots = std::max(p.slots, slots_used(b));
        }
    p.output_shape = {B, Hq, L, Ev};
    p.weights_shape = {B, Hq, L, S};
    // The workspace as the run will size it: this cache's storage, and the decoding kernel's chunks of slots.
    const kernels::KernelSet& set = *p.sdpa.kernel_set;
    kernels::AttentionProblem sized = attention_problem(p.sdpa, nullptr, nullptr, nullptr, {}, nullptr, nullptr);
    sized.in.kv_float16 = config_.dtype == CacheDtype::float16;
    sized.in.kv_blocked = true;
    if (p.few_rows) sized.in.S = p.slots;
    p.workspace_bytes = p.sdpa.batch == 0 ? 0 : p.few_rows ? set.few_rows_workspace(sized) : set.attention_workspace(sized);
    p.float16_io = s.float16_io;
    if (p.float16_io)
        p.workspace_bytes = half_io::bytes({numel(q), numel(p.output_shape), s.need_weights ? numel(p.weights_shape) : 0},
                                           p.workspace_bytes);
    *plan = std::move(p);
    return {};
}

void KvCache::run_attend(const KvAttendPlan& plan, const float* query, const MaskRef& mask, float* output,
                         float* weights, void* workspace) const {
    const SdpaPlan& sp = plan.sdpa;
    if (sp.batch == 0 || sp.L == 0) return;
    const kernels::KernelSet& set = *sp.kernel_set;
    const bool half = config_.dtype == CacheDtype::float16;
    kernels::AttentionProblem p =
        attention_problem(sp, query, nullptr, nullptr, mask, output, sp.need_weights ? weights : nullptr);
    if (plan.few_rows) {
        // The decoding kernel's rows are the G query heads of a key/value head, L rows each: each follows its own
        // head's rules (and mask row) in the per-head plan, over the slots its element uses.
        p.rules = attention_problem(plan.per_head, nullptr, nullptr, nullptr, mask, nullptr, nullptr).rules;
        p.rules.stack = plan.per_head.q_heads / plan.per_head.kv_heads;
        p.rules.stack_rows = plan.per_head.L;
        p.in.S = plan.slots;
    }
    kernels::AttentionInputs& in = p.in;
    in.kv_float16 = half;
    if (half) {
        in.key16 = reinterpret_cast<const std::uint16_t*>(key_storage());
        in.value16 = reinterpret_cast<const std::uint16_t*>(value_storage());
    } else {
        in.key = reinterpret_cast<const float*>(key_storage());
        in.value = reinterpret_cast<const float*>(value_storage());
    }
    in.kv_position_flags = position_flags();
    in.kv_capacity = config_.capacity;
    in.kv_ring = plan.ring.empty() ? nullptr : plan.ring.data();
    in.kv_blocked = true;
    in.key_stride = layout().key_elements(config_.capacity);
    in.value_stride = layout().value_elements(config_.capacity);
    if (plan.few_rows) set.few_rows(p, workspace);
    else set.attention(p, workspace);
}

void KvCache::run_attend(const KvAttendPlan& plan, const std::uint16_t* query, const MaskRef& mask,
                         std::uint16_t* output, std::uint16_t* weights, void* workspace) const {
    const Shape& o = plan.output_shape;  // (B, Hq, L, Ev)
    const std::size_t nq = o[0] * o[1] * o[2] * config_.head_dim;
    const std::size_t nout = numel(plan.output_shape), nw = plan.sdpa.need_weights ? numel(plan.weights_shape) : 0;
    float* c[3];  // query, output, weights
    void* rest = half_io::carve(workspace, {nq, nout, nw}, c);
    half_io::widen(query, nq, c[0]);
    run_attend(plan, c[0], mask, c[1], nw ? c[2] : nullptr, rest);
    half_io::narrow(c[1], nout, output);
    if (nw && weights) half_io::narrow(c[2], nw, weights);
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

}  // namespace xattn
