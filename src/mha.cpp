// torch.nn.MultiheadAttention's forward: project, split heads, attend (the SDPA core), merge heads, project.
#include "xattn/mha.hpp"

#include "alloc_room.hpp"
#include "mha_internal.hpp"
#include "xattn/sdpa_backward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <stdexcept>

#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"

namespace xattn {
namespace {

constexpr Function kFn = Function::mha_create;

double num(std::size_t n) { return static_cast<double>(n); }

kernels::LinearProblem linear_problem(std::size_t rows, const float* x, std::size_t x_stride, const float* W,
                                      const float* b, std::size_t in, std::size_t out, float* y, std::size_t y_stride,
                                      unsigned threads) {
    kernels::LinearProblem p;
    p.threads = threads;
    p.rows = rows, p.in = in, p.out = out;
    p.x = x, p.x_stride = x_stride, p.w = W, p.bias = b, p.y = y, p.y_stride = y_stride;
    return p;
}

// The rules' options against the module and the call: the soft-cap and window as SDPA checks them, one ALiBi slope
// per head, one key length per batch element within S, and no rule with a position beside appended keys.
Status check_rules(Function fn, const MhaConfig& c, const MhaSettings& s, std::size_t N, std::size_t S) {
    if (Status st = check_rule_settings(fn, s.softcap, s.window); !st.ok()) return st;
    if (c.add_bias_kv || c.add_zero_attn)
        for (const auto& [name, set] : {std::pair{Argument::window_left, s.window.left >= 0},
                                        std::pair{Argument::window_right, s.window.right >= 0},
                                        std::pair{Argument::alibi_slopes, !s.alibi_slopes.empty()},
                                        std::pair{Argument::key_lengths, !s.key_lengths.empty()}})
            if (set)
                return Status::fail(fn, Message::positioned_rule_appended_keys,
                                    {name, Argument::add_bias_kv, Argument::add_zero_attn});
    if (!s.alibi_slopes.empty() && s.alibi_slopes.size() != c.num_heads)
        return Status::fail(fn, Message::per_module_head_count, {Argument::alibi_slopes, Argument::num_heads},
                            {num(s.alibi_slopes.size()), num(c.num_heads)});
    for (std::size_t h = 0; h < s.alibi_slopes.size(); ++h)
        if (!std::isfinite(s.alibi_slopes[h]))
            return Status::fail(fn, Message::value_not_finite, {Argument::alibi_slopes}, {num(h), s.alibi_slopes[h]});
    if (!s.key_lengths.empty() && s.key_lengths.size() != N)
        return Status::fail(fn, Message::per_element_count_n, {Argument::key_lengths}, {num(s.key_lengths.size()), num(N)});
    for (std::size_t n = 0; n < s.key_lengths.size(); ++n)
        if (s.key_lengths[n] < 0 || static_cast<std::size_t>(s.key_lengths[n]) > S)
            return Status::fail(fn, Message::length_range, {Argument::key_lengths},
                                {num(n), static_cast<double>(s.key_lengths[n]), num(S)});
    return {};
}

// The masks as the heads' attention sees them: the smallest SDPA mask that holds them, and the causal rule as
// SDPA's own flag unless appended keys (bias_kv, zero_attn), never masked, forbid it.
// With attn_mask the causal rule applies too (ONNX's rule; PyTorch's hint gives the same whenever it is true);
// bottom-right it is shifted by S − L.
MhaMaskPlan merged_mask_plan(MaskKind kpm_kind, MaskKind attn_kind, bool per_head, bool is_causal, bool bottom_right,
                             std::size_t N, std::size_t H, std::size_t L, std::size_t S, std::size_t S_total) {
    const bool has_kpm = kpm_kind != MaskKind::none, has_am = attn_kind != MaskKind::none;
    MhaMaskPlan mp;
    mp.causal_flag = is_causal && S_total == S;
    mp.causal_in_mask = is_causal && S_total != S;
    mp.causal_shift = bottom_right ? static_cast<std::int64_t>(S) - static_cast<std::int64_t>(L) : 0;
    if (has_kpm || has_am || mp.causal_in_mask) {
        const bool all_boolean = (!has_kpm || kpm_kind == MaskKind::boolean) && (!has_am || attn_kind == MaskKind::boolean);
        mp.kind = all_boolean ? MaskKind::boolean : MaskKind::additive;
        mp.n = has_kpm || per_head ? N : 1;
        mp.h = per_head ? H : 1;
        mp.l = has_am || mp.causal_in_mask ? L : 1;
        mp.s = S_total;
    }
    return mp;
}

// The sizes a call's query, key and value give: L, S and N (1 when unbatched).
struct CallDims {
    bool batched = true;
    std::size_t L = 0, S = 0, N = 1;
};

// The query, key and value of a call, as given, for the messages that show all three.
struct CallInputs {
    const Shape& q;
    const Shape& k;
    const Shape& v;
};

// The inputs against the module: their ranks, embedding dims, batch sizes and key lengths; fills `d`.
Status check_inputs(Function fn, const MhaConfig& c, const CallInputs& in, CallDims* d) {
    const Shape &q = in.q, &k = in.k, &v = in.v;
    const std::size_t E = c.embed_dim, kdim = c.kdim ? c.kdim : E, vdim = c.vdim ? c.vdim : E;
    if (q.size() != 2 && q.size() != 3)
        return Status::fail(fn, c.batch_first ? Message::mha_query_rank_batch_first : Message::mha_query_rank_seq_first,
                            {}, {}, {q});
    if (k.size() != q.size() || v.size() != q.size()) return Status::fail(fn, Message::mha_rank_mismatch, {}, {}, {q, k, v});
    d->batched = q.size() == 3;
    const bool bf = c.batch_first && d->batched;
    // Positions of the sequence and batch dims in each input.
    const std::size_t seq = bf ? 1 : 0, bat = bf ? 0 : 1;
    d->L = q[seq], d->S = k[seq], d->N = d->batched ? q[bat] : 1;
    const auto embedding = [&](Argument tensor, std::size_t got, Argument dim, std::size_t want) {
        return Status::fail(fn, Message::mha_embedding_mismatch, {tensor, dim}, {num(got), num(want)}, {q, k, v});
    };
    if (q.back() != E) return embedding(Argument::query, q.back(), Argument::embed_dim, E);
    if (k.back() != kdim) return embedding(Argument::key, k.back(), Argument::kdim, kdim);
    if (v.back() != vdim) return embedding(Argument::value, v.back(), Argument::vdim, vdim);
    if (d->batched && (k[bat] != d->N || v[bat] != d->N))
        return Status::fail(fn, Message::mha_batch_mismatch, {}, {}, {q, k, v});
    if (v[seq] != d->S) return Status::fail(fn, Message::mha_length_mismatch, {}, {}, {q, k, v});
    return {};
}

// key_padding_mask (N, S), or (S) unbatched, and attn_mask (L, S) or (N·H, L, S), which `per_head` tells.
Status check_masks(Function fn, std::size_t H, const CallDims& d, const CallInputs& in, MaskKind kpm_kind,
                   const Shape& kpm, MaskKind attn_kind, const Shape& am, bool* per_head) {
    if (kpm_kind != MaskKind::none) {
        const Shape want = d.batched ? Shape{d.N, d.S} : Shape{d.S};
        if (kpm != want)
            return Status::fail(fn, d.batched ? Message::mha_padding_shape : Message::mha_padding_shape_unbatched,
                                {Argument::key_padding_mask}, {}, {in.q, in.k, in.v, kpm, want});
    }
    *per_head = false;
    if (attn_kind != MaskKind::none) {
        const Shape two{d.L, d.S}, three{d.N * H, d.L, d.S};
        *per_head = am == three && am.size() == 3;
        if (am != two && !*per_head)
            return Status::fail(fn, Message::mha_attn_mask_shape, {Argument::attn_mask}, {}, {in.q, in.k, in.v, am, two, three});
    }
    return {};
}

// Every tensor the call takes or makes within the size limit: the inputs, the projected keys and values
// (N, S_total, E), and the per-head weights (N, H, L, S_total) when they are asked for.
Status check_sizes(Function fn, std::size_t E, std::size_t H, const CallDims& d, std::size_t S_total,
                   const CallInputs& in, bool need_weights) {
    for (const auto& [name, shape] :
         {std::pair{Argument::query, in.q}, std::pair{Argument::key, in.k}, std::pair{Argument::value, in.v},
          std::pair{Argument::projected_key, Shape{d.N, S_total, E}},
          std::pair{Argument::projected_value, Shape{d.N, S_total, E}}})
        if (Status st = check_tensor_size(fn, name, shape); !st.ok()) return st;
    if (need_weights)
        if (Status st = check_tensor_size(fn, Argument::per_head_weights, Shape{d.N, H, d.L, S_total}); !st.ok())
            return st;
    return {};
}

// What the heads' attention is asked: the call's rules, the module's dropout when training, and the causal rule
// as the merged mask plan leaves it to SDPA's flag.
SdpaSettings heads_settings(const MhaConfig& c, const MhaSettings& s, const MhaMaskPlan& mp, bool need_weights) {
    SdpaSettings sdpa;
    sdpa.need_weights = need_weights;
    if (s.training) sdpa.dropout_p = c.dropout;
    sdpa.seed = s.seed;
    sdpa.is_causal = mp.causal_flag;
    sdpa.causal_alignment = s.causal_alignment;
    sdpa.softcap = s.softcap;
    sdpa.window = s.window;
    sdpa.alibi_slopes = s.alibi_slopes;
    sdpa.key_lengths = s.key_lengths;
    return sdpa;
}

}  // namespace

Status MultiheadAttention::check_config(const MhaConfig& c) {
    if (c.embed_dim == 0 || c.num_heads == 0)
        return Status::fail(kFn, Message::dims_not_positive, {Argument::embed_dim, Argument::num_heads},
                            {num(c.embed_dim), num(c.num_heads)});
    if (c.embed_dim % c.num_heads != 0)
        return Status::fail(kFn, Message::heads_not_divisor, {Argument::embed_dim, Argument::num_heads},
                            {num(c.embed_dim), num(c.num_heads)});
    if (!(c.dropout >= 0.0 && c.dropout < 1.0))
        return Status::fail(kFn, Message::probability_range, {Argument::dropout}, {c.dropout});
    const std::size_t E = c.embed_dim, kdim = c.kdim ? c.kdim : E, vdim = c.vdim ? c.vdim : E;
    for (const auto& [name, shape] : {std::pair{Argument::in_proj_weight, Shape{3 * E, std::max({E, kdim, vdim})}},
                                      std::pair{Argument::out_proj_weight, Shape{E, E}}})
        if (Status st = check_tensor_size(kFn, name, shape); !st.ok()) return st;
    return {};
}

std::size_t MultiheadAttention::parameter_floats(const MhaConfig& c) {
    const std::size_t E = c.embed_dim, kdim = c.kdim ? c.kdim : E, vdim = c.vdim ? c.vdim : E;
    return E * (E + kdim + vdim) + E * E + (c.bias ? 4 * E : 0) + (c.add_bias_kv ? 2 * E : 0);
}

std::size_t MultiheadAttention::parameter_bytes(const MhaConfig& c) { return parameter_floats(c) * sizeof(float); }

Status MultiheadAttention::create(const MhaConfig& config, std::unique_ptr<MultiheadAttention>* out) {
    if (Status st = check_config(config); !st.ok()) return st;
    Storage storage(static_cast<float*>(std::malloc(parameter_bytes(config))));  // malloc, not new (alloc_room.hpp)
    if (!detail::allocated_with_room(storage.get()))
        return Status::fail(kFn, Message::parameters_too_large, {Argument::embed_dim},
                            {num(config.embed_dim), num(parameter_bytes(config))});
    out->reset(new MultiheadAttention(config, std::move(storage)));
    return {};
}

MultiheadAttention::MultiheadAttention(const MhaConfig& config)
    : MultiheadAttention(config, [&config] {
          if (Status st = check_config(config); !st.ok()) throw std::invalid_argument(st.message());
          Storage storage(static_cast<float*>(std::malloc(parameter_bytes(config))));
          if (!storage) throw std::bad_alloc();
          return storage;
      }()) {}

MultiheadAttention::MultiheadAttention(const MhaConfig& config, Storage storage)
    : config_(config), storage_(std::move(storage)) {
    const std::size_t E = config.embed_dim;
    // One block, in the order of PyTorch's in_proj_weight: q, k, v weights side by side.
    float* at = storage_.get();
    auto span = [&at](std::size_t n) {
        const ParamSpan s{at, n};
        at += n;
        return s;
    };
    q_weight_ = span(E * E), k_weight_ = span(E * kdim()), v_weight_ = span(E * vdim());
    in_bias_ = span(config.bias ? 3 * E : 0);
    out_weight_ = span(E * E), out_bias_ = span(config.bias ? E : 0);
    bias_k_ = span(config.add_bias_kv ? E : 0), bias_v_ = span(config.add_bias_kv ? E : 0);
    // The table, in the order of PyTorch's state_dict.
    const auto entry = [this](const char* name, const ParamSpan& at, Shape shape) {
        table_.push_back({name, static_cast<std::size_t>(at.data() - storage_.get()), std::move(shape)});
    };
    if (packed_in_proj()) {
        entry("in_proj_weight", q_weight_, {3 * E, E});
    } else {
        entry("q_proj_weight", q_weight_, {E, E});
        entry("k_proj_weight", k_weight_, {E, kdim()});
        entry("v_proj_weight", v_weight_, {E, vdim()});
    }
    if (config.bias) entry("in_proj_bias", in_bias_, {3 * E});
    if (config.add_bias_kv) {
        entry("bias_k", bias_k_, {1, 1, E});
        entry("bias_v", bias_v_, {1, 1, E});
    }
    entry("out_proj.weight", out_weight_, {E, E});
    if (config.bias) entry("out_proj.bias", out_bias_, {E});
    // Initialised with PyTorch's distributions (not its values): Xavier-uniform in-projections,
    // uniform(±1/sqrt(E)) out-projection, zero biases, Xavier-normal bias_k / bias_v. A splitmix64
    // stream rather than <random>: large modules are created in wasm too, where this is several times faster.
    std::uint64_t state = config.init_seed;
    auto next_unit = [&state] {  // uniform in [0, 1)
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
    };
    auto uniform = [&](ParamSpan w, std::size_t /*n*/, double bound) {
        for (float& x : w) x = static_cast<float>((2.0 * next_unit() - 1.0) * bound);
    };
    const double in_bound = packed_in_proj() ? std::sqrt(6.0 / (E + 3 * E)) : 0.0;
    uniform(q_weight_, E * E, packed_in_proj() ? in_bound : std::sqrt(6.0 / (E + E)));
    uniform(k_weight_, E * kdim(), packed_in_proj() ? in_bound : std::sqrt(6.0 / (E + kdim())));
    uniform(v_weight_, E * vdim(), packed_in_proj() ? in_bound : std::sqrt(6.0 / (E + vdim())));
    uniform(out_weight_, E * E, 1.0 / std::sqrt(static_cast<double>(E)));
    std::fill(in_bias_.begin(), in_bias_.end(), 0.0f);
    std::fill(out_bias_.begin(), out_bias_.end(), 0.0f);
    if (config.add_bias_kv) {
        const double stddev = std::sqrt(2.0 / (E + E));
        for (const ParamSpan& w : {bias_k_, bias_v_}) {
            for (float& x : w) {  // Box-Muller
                const double u1 = 1.0 - next_unit(), u2 = next_unit();
                x = static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
            }
        }
    }
}

const ParameterInfo* MultiheadAttention::find_parameter(const std::string& name) const {
    for (const ParameterInfo& p : table_)
        if (p.name == name) return &p;
    return nullptr;
}

Status MultiheadAttention::check_parameter(const std::string& name, std::size_t count, const ParameterInfo** found) const {
    // Only refusals build text: a valid call allocates nothing.
    *found = find_parameter(name);
    if (!*found) {
        std::string known;
        for (const ParameterInfo& p : table_) known += (known.empty() ? "" : ", ") + p.name;
        return Status::fail(Function::mha_parameters, Message::parameter_unknown, {}, {}, {}, {name, known});
    }
    if (count != (*found)->size())
        return Status::fail(Function::mha_parameters, Message::parameter_size, {}, {num((*found)->size()), num(count)},
                            {(*found)->shape}, {name});
    return {};
}

Status MultiheadAttention::set_parameter(const std::string& name, const float* data, std::size_t count) {
    const ParameterInfo* p = nullptr;
    if (Status st = check_parameter(name, count, &p); !st.ok()) return st;
    std::copy(data, data + count, storage_.get() + p->offset);
    return {};
}

void MultiheadAttention::set_parameter(const std::string& name, const xt::xarray<float>& value) {
    if (Status st = set_parameter(name, value.data(), value.size()); !st.ok()) throw std::invalid_argument(st.message());
}

Status MultiheadAttention::get_parameter(const std::string& name, float* data, std::size_t count) const {
    const ParameterInfo* p = nullptr;
    if (Status st = check_parameter(name, count, &p); !st.ok()) return st;
    std::copy_n(storage_.get() + p->offset, count, data);
    return {};
}

xt::xarray<float> MultiheadAttention::parameter(const std::string& name) const {
    const ParameterInfo* p = find_parameter(name);
    if (!p) {
        const ParameterInfo* unused = nullptr;
        throw std::invalid_argument(check_parameter(name, 0, &unused).message());
    }
    xt::xarray<float> result = xt::xarray<float>::from_shape(p->shape);
    std::copy_n(storage_.get() + p->offset, result.size(), result.data());
    return result;
}

std::size_t MhaMaskPlan::elements() const { return n * h * l * s; }

Status MultiheadAttention::plan_forward(const Shape& q, const Shape& k, const Shape& v, MaskKind kpm_kind,
                                        const Shape& kpm, MaskKind attn_kind, const Shape& am,
                                        const MhaSettings& settings, MhaPlan* plan) const {
    return plan_call(q, k, v, kpm_kind, kpm, attn_kind, am, settings, false, plan);
}

Status MultiheadAttention::plan_call(const Shape& q, const Shape& k, const Shape& v, MaskKind kpm_kind,
                                     const Shape& kpm, MaskKind attn_kind, const Shape& am,
                                     const MhaSettings& settings, bool backward, MhaPlan* plan) const {
    // (The backward is refused with the forward's messages; only its own grad_output check is its own.)
    const Function fn = Function::mha_forward;
    const std::size_t E = config_.embed_dim, H = config_.num_heads;
    const CallInputs in{q, k, v};
    CallDims d;
    if (Status st = check_inputs(fn, config_, in, &d); !st.ok()) return st;
    const std::size_t S_total = d.S + (config_.add_bias_kv ? 1 : 0) + (config_.add_zero_attn ? 1 : 0);
    bool per_head = false;
    if (Status st = check_masks(fn, H, d, in, kpm_kind, kpm, attn_kind, am, &per_head); !st.ok()) return st;
    if (Status st = check_rules(fn, config_, settings, d.N, d.S); !st.ok()) return st;
    const bool need_weights = settings.need_weights && !backward;
    if (Status st = check_sizes(fn, E, H, d, S_total, in, need_weights); !st.ok()) return st;

    MhaPlan p;
    p.batched = d.batched;
    p.N = d.N, p.L = d.L, p.S = d.S, p.S_total = S_total;
    p.need_weights = need_weights;
    p.average_attn_weights = settings.average_attn_weights;
    p.is_causal = settings.is_causal;
    p.attn_mask_per_head = per_head;
    p.backward = backward;
    p.output_shape = q;
    p.weights_shape = settings.average_attn_weights ? Shape{d.N, d.L, S_total} : Shape{d.N, H, d.L, S_total};
    if (!d.batched) p.weights_shape.erase(p.weights_shape.begin());
    p.query_rows = d.L * d.N, p.key_rows = d.S * d.N;

    p.mask = merged_mask_plan(kpm_kind, attn_kind, per_head, settings.is_causal,
                              settings.causal_alignment == CausalAlignment::bottom_right, d.N, H, d.L, d.S, S_total);
    const MhaMaskPlan& mp = p.mask;
    if (mp.kind != MaskKind::none)
        if (Status st = check_tensor_size(fn, Argument::merged_mask, {mp.n, mp.h, mp.l, mp.s}); !st.ok()) return st;

    // The heads' attention, planned here, so the run plans (and allocates) nothing.
    const SdpaSettings sdpa = heads_settings(config_, settings, mp, need_weights);
    const Shape qh{d.N, H, d.L, E / H}, kh{d.N, H, S_total, E / H};
    const Shape mask_shape = mp.kind == MaskKind::none ? Shape{} : Shape{mp.n, mp.h, mp.l, mp.s};
    const Status st = backward ? plan_sdpa_backward(qh, kh, kh, qh, mp.kind, mask_shape, sdpa, &p.attention)
                               : plan_sdpa(qh, kh, kh, mp.kind, mask_shape, sdpa, &p.attention);
    if (!st.ok()) return Status(st).as(fn);
    p.workspace_bytes = backward ? backward_workspace(*this, p) : forward_workspace(*this, p);
    *plan = std::move(p);
    return {};
}


void MultiheadAttention::project_heads(const MhaPlan& plan, const float* query, const float* key, const float* value,
                                       const Scratch& w) const {
    const std::size_t E = config_.embed_dim, H = config_.num_heads, hd = E / H;
    const std::size_t N = plan.N, L = plan.L, S = plan.S, St = plan.S_total;
    const bool bf = config_.batch_first && plan.batched;
    const kernels::KernelSet& set = *plan.attention.kernel_set;
    const float* biases = config_.bias ? in_bias_.data() : nullptr;  // (3E): q, k, v
    // Row t of batch element n of a head-split tensor (N, H, T, hd), head h.
    auto scatter = [&](float* dst, std::size_t T, std::size_t R, std::size_t Tin) {
        const detail::RowOrder order{bf, N, Tin};
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t h = 0; h < H; ++h)
                std::copy_n(w.rows + r * E + h * hd, hd, dst + ((order.n(r) * H + h) * T + order.t(r)) * hd);
    };
    // 1. Every row of each input at once: (rows, in) · Wᵀ (in, E) + b.   -> (rows, E), then split into heads
    if (config_.add_zero_attn) {  // its key and value stay 0; the rows below and bias_kv fill every other one
        std::fill(w.kh, w.kh + N * St * E, 0.0f);
        std::fill(w.vh, w.vh + N * St * E, 0.0f);
    }
    kernels::run_linear(set, linear_problem(plan.query_rows, query, E, q_weight_.data(), biases, E, E, w.rows, E, plan.attention.threads), w.linear);
    scatter(w.qh, L, plan.query_rows, L);
    kernels::run_linear(set, linear_problem(plan.key_rows, key, kdim(), k_weight_.data(), biases ? biases + E : nullptr,
                                            kdim(), E, w.rows, E, plan.attention.threads), w.linear);
    scatter(w.kh, St, plan.key_rows, S);
    kernels::run_linear(set, linear_problem(plan.key_rows, value, vdim(), v_weight_.data(),
                                            biases ? biases + 2 * E : nullptr, vdim(), E, w.rows, E, plan.attention.threads), w.linear);
    scatter(w.vh, St, plan.key_rows, S);
    // add_bias_kv appends one learned key and value after the S keys of every batch element.
    if (config_.add_bias_kv)
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t h = 0; h < H; ++h) {
                std::copy_n(bias_k_.data() + h * hd, hd, w.kh + ((n * H + h) * St + S) * hd);
                std::copy_n(bias_v_.data() + h * hd, hd, w.vh + ((n * H + h) * St + S) * hd);
            }
}

void MultiheadAttention::build_mask(const MhaPlan& plan, const MhaMasks& masks, void* out) const {
    // 2. One SDPA mask (mp.n, mp.h, mp.l, S_total) from the key padding mask, attn_mask and the causal rule,
    //    in SDPA's polarity (boolean: true = may attend). The appended keys are never masked, as PyTorch
    //    pads masks with zeros there.
    const MhaMaskPlan& mp = plan.mask;
    const std::size_t H = config_.num_heads, L = plan.L, S = plan.S, St = plan.S_total;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const MaskRef& kpm = masks.key_padding_mask;
    const MaskRef& am = masks.attn_mask;
    // MHA polarity: a true boolean forbids; a float is added.
    auto added = [&](const MaskRef& m, std::size_t at) {
        if (m.kind == MaskKind::boolean) return m.bools[at] ? neg_inf : 0.0f;
        return m.values[at];
    };
    auto* bools = static_cast<std::uint8_t*>(out);
    auto* values = static_cast<float*>(out);
    for (std::size_t n = 0; n < mp.n; ++n)
        for (std::size_t h = 0; h < mp.h; ++h)
            for (std::size_t i = 0; i < mp.l; ++i) {
                const std::size_t row = ((n * mp.h + h) * mp.l + i) * St;
                const std::size_t am_row = ((plan.attn_mask_per_head ? n * H + h : 0) * L + i) * S;
                for (std::size_t j = 0; j < St; ++j) {
                    float add = 0.0f;
                    if (j < S) {
                        if (mp.causal_in_mask && static_cast<std::int64_t>(j) > static_cast<std::int64_t>(i) + mp.causal_shift)
                            add = neg_inf;
                        if (am.kind != MaskKind::none) add += added(am, am_row + j);
                        if (kpm.kind != MaskKind::none) add += added(kpm, n * S + j);
                    }
                    if (mp.kind == MaskKind::boolean) bools[row + j] = add != neg_inf;
                    else values[row + j] = add;
                }
            }
}

void MultiheadAttention::merge_heads(const MhaPlan& plan, const float* attn, float* merged) const {
    // 4a. The heads side by side, in the query's row order.   (N, H, L, hd) -> (L·N, E)
    const std::size_t E = config_.embed_dim, H = config_.num_heads, hd = E / H;
    const detail::RowOrder order{config_.batch_first && plan.batched, plan.N, plan.L};
    for (std::size_t r = 0; r < plan.query_rows; ++r)
        for (std::size_t h = 0; h < H; ++h)
            std::copy_n(attn + ((order.n(r) * H + h) * plan.L + order.t(r)) * hd, hd, merged + r * E + h * hd);
}

void MultiheadAttention::project_out(const MhaPlan& plan, const float* attn, float* merged, float* output,
                                     const Scratch& w) const {
    // 4. Merge heads and project out.   (N, H, L, hd) -> (L·N, E) -> output (L·N, E)
    const std::size_t E = config_.embed_dim;
    merge_heads(plan, attn, merged);
    kernels::run_linear(*plan.attention.kernel_set,
                        linear_problem(plan.query_rows, merged, E, out_weight_.data(),
                                       config_.bias ? out_bias_.data() : nullptr, E, E, output, E, plan.attention.threads),
                        w.linear);
}

MaskRef MultiheadAttention::mask_view(const MhaPlan& plan, const void* mask) {
    MaskRef m;  // its shape was planned: the run needs none
    m.kind = plan.mask.kind;
    if (m.kind == MaskKind::boolean) m.bools = static_cast<const std::uint8_t*>(mask);
    if (m.kind == MaskKind::additive) m.values = static_cast<const float*>(mask);
    return m;
}

void MultiheadAttention::run_forward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                                     const MhaMasks& masks, float* output, float* weights, void* workspace) const {
    // E >= 1, so an empty output means N = 0 or L = 0: nothing to compute, and no loop over a huge N.
    if (numel(plan.output_shape) == 0) return;
    Scratch w{};
    Carver carver(workspace);
    Scratch::carve(*this, plan, carver, &w);
    project_heads(plan, query, key, value, w);
    if (plan.mask.kind != MaskKind::none) build_mask(plan, masks, w.mask);
    // 3. Attention per (n, h): the SDPA core with scale 1/sqrt(hd).   (N, H, L, hd)
    float* head_weights = !plan.need_weights ? nullptr : plan.average_attn_weights ? w.head_weights : weights;
    run_sdpa(plan.attention, w.qh, w.kh, w.vh, mask_view(plan, w.mask), w.attn, head_weights, w.attention);
    project_out(plan, w.attn, w.merged, output, w);
    // 5. Weights averaged over heads.   (N, H, L, St) -> (N, L, St)
    if (plan.need_weights && plan.average_attn_weights) {
        const std::size_t H = config_.num_heads, per_head = plan.L * plan.S_total;
        for (std::size_t n = 0; n < plan.N; ++n)
            for (std::size_t x = 0; x < per_head; ++x) {
                float acc = 0.0f;
                for (std::size_t h = 0; h < H; ++h) acc += w.head_weights[(n * H + h) * per_head + x];
                weights[n * per_head + x] = acc / static_cast<float>(H);
            }
    }
}

void MultiheadAttention::run_forward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                                     const MhaMasks& masks, float* output, float* weights) const {
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_forward(plan, query, key, value, masks, output, weights, workspace.data());
}

std::uint64_t MultiheadAttention::forward_workspace(const MultiheadAttention& m, const MhaPlan& plan) {
    Carver c(nullptr);
    Scratch::carve(m, plan, c, nullptr);
    return c.bytes();
}

AttentionResult MultiheadAttention::forward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                            const xt::xarray<float>& value, const MhaForwardOptions& o) const {
    const Shape q(query.shape().begin(), query.shape().end());
    const Shape k(key.shape().begin(), key.shape().end());
    const Shape v(value.shape().begin(), value.shape().end());
    const MhaMasks masks{o.key_padding_mask.ref(), o.attn_mask.ref()};
    MhaPlan plan;
    if (Status st = plan_forward(q, k, v, masks.key_padding_mask.kind, masks.key_padding_mask.shape,
                                 masks.attn_mask.kind, masks.attn_mask.shape, o, &plan);
        !st.ok())
        throw std::invalid_argument(st.message());
    AttentionResult result;
    result.output = xt::xarray<float>::from_shape(plan.output_shape);
    // Without need_weights the weights are an empty (0,) array (a default xarray would be a 0-D scalar).
    result.weights = xt::xarray<float>::from_shape(plan.need_weights ? plan.weights_shape : Shape{0});
    run_forward(plan, query.data(), key.data(), value.data(), masks, result.output.data(),
                plan.need_weights ? result.weights.data() : nullptr);
    return result;
}

}  // namespace xattn
