// The xtensor-facing scaled_dot_product_attention: validates, allocates, runs the kernel.
#include <stdexcept>

#include "xattn/sdpa.hpp"

namespace xattn {

Mask Mask::boolean(xt::xarray<bool> allowed) {
    Mask m;
    m.kind = MaskKind::boolean;
    m.bools = std::move(allowed);
    return m;
}

Mask Mask::additive(xt::xarray<float> bias) {
    Mask m;
    m.kind = MaskKind::additive;
    m.values = std::move(bias);
    return m;
}

MaskRef Mask::ref() const {
    MaskRef r;
    r.kind = kind;
    if (kind == MaskKind::boolean) {
        static_assert(sizeof(bool) == 1, "boolean masks are read as bytes");
        r.bools = reinterpret_cast<const std::uint8_t*>(bools.data());
        r.shape.assign(bools.shape().begin(), bools.shape().end());
    } else if (kind == MaskKind::additive) {
        r.values = values.data();
        r.shape.assign(values.shape().begin(), values.shape().end());
    }
    return r;
}

AttentionResult scaled_dot_product_attention(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                             const xt::xarray<float>& value, const SdpaOptions& options) {
    const Shape q(query.shape().begin(), query.shape().end());
    const Shape k(key.shape().begin(), key.shape().end());
    const Shape v(value.shape().begin(), value.shape().end());
    const MaskRef mask = options.attn_mask.ref();
    SdpaPlan plan;
    if (Status st = plan_sdpa(q, k, v, mask.kind, mask.shape, settings_of(options), &plan); !st.ok())
        throw std::invalid_argument(st.message());

    AttentionResult result;
    result.output = xt::xarray<float>::from_shape(plan.output_shape);
    // Without need_weights the weights are an empty (0,) array (a default xarray would be a 0-D scalar).
    result.weights = xt::xarray<float>::from_shape(plan.need_weights ? plan.weights_shape : Shape{0});
    run_sdpa(plan, query.data(), key.data(), value.data(), mask, result.output.data(),
             plan.need_weights ? result.weights.data() : nullptr);
    return result;
}

}  // namespace xattn
