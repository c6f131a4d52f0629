// Fuzzes argument validation and broadcasting: arbitrary shapes, mask shapes and option values go
// through plan_sdpa, plan_sdpa_backward and MultiheadAttention's checks. Refusals must be clean;
// accepted plans must be self-consistent, and small ones are run (under ASan/UBSan) to prove every
// index the plan allows stays inside the buffers.
#include <vector>

#include "fuzz_common.hpp"

namespace {

using xattn::Shape;

Shape shape(FuzzedDataProvider& in, std::size_t rank) {
    Shape s(rank);
    for (auto& d : s) d = fuzz::dim(in);
    return s;
}

std::size_t small_numel(const Shape& s) {
    std::uint64_t n = 0;
    return xattn::element_count(s, &n) && n <= 4096 ? static_cast<std::size_t>(n) : SIZE_MAX;
}

void fuzz_sdpa(FuzzedDataProvider& in) {
    const std::size_t rank = in.ConsumeIntegralInRange<std::size_t>(0, 5);
    Shape q = shape(in, rank), k = q, v = q;
    // Often derive key and value from query so that deeper checks are reached.
    if (in.ConsumeBool()) k = shape(in, in.ConsumeBool() ? rank : in.ConsumeIntegralInRange<std::size_t>(0, 5));
    else if (rank >= 2) k[rank - 2] = fuzz::dim(in);
    if (in.ConsumeBool()) v = shape(in, in.ConsumeBool() ? k.size() : in.ConsumeIntegralInRange<std::size_t>(0, 5));
    else if (!k.empty()) v = k, v.back() = fuzz::dim(in);
    if (rank >= 3 && in.ConsumeBool()) q[rank - 3] = k.size() >= 3 ? k[k.size() - 3] * in.ConsumeIntegralInRange<std::size_t>(1, 3) : q[rank - 3];

    const auto mask_kind = static_cast<xattn::MaskKind>(in.ConsumeIntegralInRange<int>(0, 2));
    Shape mask_shape;
    if (mask_kind != xattn::MaskKind::none) {
        const std::size_t mrank = in.ConsumeIntegralInRange<std::size_t>(0, rank + 1);
        for (std::size_t m = 0; m < mrank; ++m) mask_shape.push_back(in.ConsumeBool() ? 1 : fuzz::dim(in));
    }
    const xattn::SdpaSettings s = fuzz::settings(in);
    xattn::SdpaPlan plan;
    const xattn::Status st = xattn::plan_sdpa(q, k, v, mask_kind, mask_shape, s, &plan);
    if (!st.ok()) {
        FUZZ_CHECK(st.message().rfind("scaled_dot_product_attention: ", 0) == 0, "message without the function: %s", st.message().c_str());
        return;
    }
    // An accepted plan describes its own shapes consistently.
    FUZZ_CHECK(plan.output_shape.size() == rank && plan.weights_shape.size() == rank, "ranks");
    FUZZ_CHECK(plan.L == q[rank - 2] && plan.E == q[rank - 1] && plan.S == k[rank - 2] && plan.Ev == v[rank - 1], "dims");
    FUZZ_CHECK(plan.q_heads % plan.kv_heads == 0, "gqa group");
    FUZZ_CHECK(std::isfinite(plan.scale) && plan.scale != 0.0f, "scale %g", plan.scale);

    // Small means every buffer, the output too: with E = 0 and S = 0 the inputs are empty while the output can
    // hold 2^26 rows, and running those under the sanitizers took 23 s (a timeout, though nothing was wrong).
    const std::size_t nq = small_numel(q), nk = small_numel(k), nv = small_numel(v), nw = small_numel(plan.weights_shape),
                      nm = small_numel(mask_shape), no = small_numel(plan.output_shape);
    if (nq == SIZE_MAX || nk == SIZE_MAX || nv == SIZE_MAX || nw == SIZE_MAX || nm == SIZE_MAX || no == SIZE_MAX) return;
    for (std::size_t b = 0; b < plan.batch; ++b) FUZZ_CHECK(plan.kv_index(b) * plan.S * plan.E <= nk, "kv_index");
    std::vector<float> qd(nq, 0.5f), kd(nk, -0.25f), vd(nv, 1.0f), out(no), w(nw);
    std::vector<std::uint8_t> bools(nm, 1);
    std::vector<float> adds(nm, 0.0f);
    xattn::MaskRef mask{mask_kind, bools.data(), adds.data(), mask_shape};
    // ASan checks every access below against these exact buffer sizes.
    xattn::run_sdpa(plan, qd.data(), kd.data(), vd.data(), mask, out.data(), plan.need_weights ? w.data() : nullptr);
    xattn::run_sdpa_rows(plan, qd.data(), kd.data(), vd.data(), mask, out.data(), plan.need_weights ? w.data() : nullptr);
    if (in.ConsumeBool()) {
        xattn::SdpaPlan bp;
        if (xattn::plan_sdpa_backward(q, k, v, plan.output_shape, mask_kind, mask_shape, s, &bp).ok()) {
            std::vector<float> dq(nq), dk(nk), dv(nv), o2(out.size()), go(out.size(), 1.0f);
            xattn::run_sdpa_backward(bp, qd.data(), kd.data(), vd.data(), mask, go.data(), o2.data(), dq.data(),
                                     dk.data(), dv.data());
        }
    }
}

void fuzz_mha(FuzzedDataProvider& in) {
    xattn::MhaConfig c;
    c.embed_dim = in.ConsumeIntegralInRange<std::size_t>(0, 12);
    c.num_heads = in.ConsumeIntegralInRange<std::size_t>(0, 5);
    c.kdim = in.ConsumeIntegralInRange<std::size_t>(0, 6);
    c.vdim = in.ConsumeIntegralInRange<std::size_t>(0, 6);
    c.bias = in.ConsumeBool();
    c.batch_first = in.ConsumeBool();
    c.add_bias_kv = in.ConsumeBool();
    c.add_zero_attn = in.ConsumeBool();
    const xattn::Status cs = xattn::MultiheadAttention::check_config(c);
    if (!cs.ok()) {
        FUZZ_CHECK(cs.message().rfind("multi_head_attention: ", 0) == 0, "%s", cs.message().c_str());
        return;
    }
    xattn::MultiheadAttention mha(c);
    const std::size_t rank = in.ConsumeIntegralInRange<std::size_t>(1, 4);
    Shape q = shape(in, rank), k = shape(in, rank), v = shape(in, rank);
    if (in.ConsumeBool() && rank >= 2) q.back() = c.embed_dim, k.back() = mha.kdim(), v.back() = mha.vdim(), v[0] = k[0];
    const auto kpm_kind = static_cast<xattn::MaskKind>(in.ConsumeIntegralInRange<int>(0, 2));
    const auto am_kind = static_cast<xattn::MaskKind>(in.ConsumeIntegralInRange<int>(0, 2));
    const Shape kpm = shape(in, in.ConsumeIntegralInRange<std::size_t>(0, 3));
    const Shape am = shape(in, in.ConsumeIntegralInRange<std::size_t>(0, 3));
    xattn::MhaPlan plan;
    xattn::MhaSettings settings;
    settings.need_weights = in.ConsumeBool();
    settings.average_attn_weights = in.ConsumeBool();
    settings.is_causal = in.ConsumeBool();
    const xattn::Status st = mha.plan_forward(q, k, v, kpm_kind, kpm, am_kind, am, settings, &plan);
    if (!st.ok()) {
        FUZZ_CHECK(st.message().rfind("multi_head_attention: ", 0) == 0, "%s", st.message().c_str());
        return;
    }
    const std::size_t nq = small_numel(q), nk = small_numel(k), nv = small_numel(v), nw = small_numel(plan.weights_shape);
    const std::size_t nkpm = small_numel(kpm), nam = small_numel(am);
    if (nq == SIZE_MAX || nk == SIZE_MAX || nv == SIZE_MAX || nw == SIZE_MAX || nkpm == SIZE_MAX || nam == SIZE_MAX) return;
    std::vector<float> qd(nq, 0.1f), kd(nk, 0.2f), vd(nv, 0.3f), out(nq), w(nw);
    std::vector<std::uint8_t> kb(nkpm, 0), ab(nam, 0);
    std::vector<float> kf(nkpm, 0.0f), af(nam, 0.0f);
    const xattn::MhaMasks masks{xattn::MaskRef{kpm_kind, kb.data(), kf.data(), kpm},
                                xattn::MaskRef{am_kind, ab.data(), af.data(), am}};
    mha.run_forward(plan, qd.data(), kd.data(), vd.data(), masks, out.data(), plan.need_weights ? w.data() : nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    if (in.ConsumeBool()) fuzz_sdpa(in);
    else fuzz_mha(in);
    return 0;
}
