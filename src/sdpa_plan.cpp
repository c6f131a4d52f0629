// Validation of scaled_dot_product_attention arguments: every refusal happens here,
// before anything is allocated, with a message naming the argument and the shapes.
#include <cmath>

#include "kernels/kernels.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/threads.hpp"

namespace xattn {
namespace {

constexpr Function kFn = Function::sdpa;

Shape leading(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

}  // namespace

std::size_t SdpaPlan::mask_row_offset(std::size_t b, std::size_t i) const {
    // weights dims are (…, L, S); walk the leading dims of problem b from the innermost out.
    const std::size_t rank = weights_shape.size();
    std::size_t offset = i * mask_strides[rank - 2];
    for (std::size_t d = rank - 2; d-- > 0;) {
        offset += (b % weights_shape[d]) * mask_strides[d];
        b /= weights_shape[d];
    }
    return offset;
}

namespace {

double dim(std::size_t d) { return static_cast<double>(d); }

// Query, key and value: their ranks, E and S, and their leading dims (equal, except dim -3 under enable_gqa,
// where Hq must be a multiple of Hkv, returned in *q_heads and *kv_heads).
Status check_inputs(const Shape& q, const Shape& k, const Shape& v, bool enable_gqa, std::size_t* q_heads,
                    std::size_t* kv_heads) {
    for (const auto& [name, shape] : {std::pair{Argument::query, &q}, std::pair{Argument::key, &k}, std::pair{Argument::value, &v}})
        if (shape->size() < 2) return Status::fail(kFn, Message::rank_below_two, {name}, {}, {*shape});
    if (k.size() != q.size() || v.size() != q.size()) return Status::fail(kFn, Message::rank_mismatch, {}, {}, {q, k, v});
    const std::size_t rank = q.size(), E = q[rank - 1], S = k[rank - 2];
    if (k[rank - 1] != E) return Status::fail(kFn, Message::key_dim_mismatch, {}, {dim(k[rank - 1]), dim(E)}, {q, k, v});
    if (v[rank - 2] != S) return Status::fail(kFn, Message::value_length_mismatch, {}, {dim(v[rank - 2]), dim(S)}, {q, k, v});
    *q_heads = *kv_heads = 1;
    for (std::size_t d = 0; d + 2 < rank; ++d) {
        if (k[d] != v[d])
            return Status::fail(kFn, Message::value_leading_mismatch, {}, {}, {q, k, v, leading(v), leading(k)});
        const bool head_dim = d + 3 == rank;
        if (head_dim && enable_gqa) {
            *q_heads = q[d], *kv_heads = k[d];
            if (k[d] == 0 ? q[d] != 0 : q[d] % k[d] != 0)
                return Status::fail(kFn, Message::gqa_heads, {Argument::enable_gqa}, {dim(q[d]), dim(k[d])}, {q, k, v});
            if (k[d] == 0) *q_heads = *kv_heads = 1;  // empty problem; keeps kv_index well defined
        } else if (k[d] != q[d]) {
            return Status::fail(kFn, head_dim ? Message::head_count_mismatch : Message::key_leading_mismatch,
                                {Argument::enable_gqa}, {}, {q, k, v, leading(q), leading(k)});
        }
    }
    return {};
}

// The mask's stride for each weights dim (0 where it broadcasts), or its refusal.
Status mask_strides_of(const Shape& mask_shape, const Shape& weights_shape, Shape* strides) {
    const auto not_broadcastable = [&] {
        return Status::fail(kFn, Message::mask_broadcast, {Argument::attn_mask}, {}, {mask_shape, weights_shape});
    };
    if (mask_shape.size() > weights_shape.size()) return not_broadcastable();
    strides->assign(weights_shape.size(), 0);
    std::size_t stride = 1;
    for (std::size_t m = mask_shape.size(); m-- > 0;) {
        const std::size_t w = m + weights_shape.size() - mask_shape.size();
        if (mask_shape[m] != weights_shape[w] && mask_shape[m] != 1) return not_broadcastable();
        (*strides)[w] = mask_shape[m] == 1 ? 0 : stride;
        stride *= mask_shape[m];
    }
    return check_tensor_size(kFn, Argument::attn_mask, mask_shape, 1);
}

}  // namespace

Status plan_sdpa(const Shape& q, const Shape& k, const Shape& v, MaskKind mask_kind, const Shape& mask_shape,
                 const SdpaSettings& s, SdpaPlan* plan) {
    std::size_t q_heads = 1, kv_heads = 1;
    if (Status st = check_inputs(q, k, v, s.enable_gqa, &q_heads, &kv_heads); !st.ok()) return st;
    const std::size_t rank = q.size();
    const std::size_t L = q[rank - 2], E = q[rank - 1], S = k[rank - 2], Ev = v[rank - 1];

    // The kernels multiply by the float32 scale: 3.5e38 would become inf and 1e-50 zero.
    if (s.scale && (!std::isfinite(static_cast<float>(*s.scale)) || static_cast<float>(*s.scale) == 0.0f))
        return Status::fail(kFn, Message::scale_not_finite, {Argument::scale},
                            {*s.scale, static_cast<double>(static_cast<float>(*s.scale))});
    if (!(s.dropout_p >= 0.0 && s.dropout_p < 1.0))
        return Status::fail(kFn, Message::probability_range, {Argument::dropout_p}, {s.dropout_p});

    Shape out_shape = leading(q), weights_shape = leading(q);
    out_shape.insert(out_shape.end(), {L, Ev});        // (…, L, Ev)
    weights_shape.insert(weights_shape.end(), {L, S});  // (…, L, S)
    Shape mask_strides;
    if (mask_kind != MaskKind::none) {
        if (s.is_causal)
            return Status::fail(kFn, Message::mask_and_causal, {Argument::attn_mask, Argument::is_causal}, {}, {mask_shape});
        if (Status st = mask_strides_of(mask_shape, weights_shape, &mask_strides); !st.ok()) return st;
    }
    for (const auto& [name, shape] : {std::pair{Argument::query, &q}, std::pair{Argument::key, &k}, std::pair{Argument::value, &v},
                                      std::pair{Argument::output, static_cast<const Shape*>(&out_shape)}})
        if (Status st = check_tensor_size(kFn, name, *shape); !st.ok()) return st;
    if (s.need_weights)
        if (Status st = check_tensor_size(kFn, Argument::weights, weights_shape); !st.ok()) return st;

    SdpaPlan p;
    p.output_shape = std::move(out_shape);
    p.weights_shape = std::move(weights_shape);
    p.problems = numel(leading(q));
    p.kv_problem_count = numel(leading(k));
    const bool has_work = numel(p.output_shape) > 0 || (s.need_weights && numel(p.weights_shape) > 0);
    p.batch = has_work ? p.problems : 0;
    p.L = L, p.S = S, p.E = E, p.Ev = Ev;
    p.q_heads = q_heads, p.kv_heads = kv_heads;
    // E = 0 makes every score 0 whatever the scale; 1 avoids dividing by zero.
    p.scale = static_cast<float>(s.scale ? *s.scale : 1.0 / std::sqrt(static_cast<double>(E ? E : 1)));
    p.is_causal = s.is_causal;
    p.causal_alignment = s.causal_alignment;
    p.dropout_p = s.dropout_p;
    p.seed = s.seed;
    p.need_weights = s.need_weights;
    p.mask_kind = mask_kind;
    p.mask_strides = std::move(mask_strides);
    p.kernel_set = &kernels::active_kernels();
    p.threads = num_threads();
    p.workspace_bytes = kernels::attention_workspace_bytes(*p.kernel_set, p);
    *plan = std::move(p);
    return {};
}

}  // namespace xattn
