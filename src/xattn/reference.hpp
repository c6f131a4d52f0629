// The lesson's four steps, written plainly with xtensor in float64: the oracle every kernel
// (row kernel, SIMD kernels, wasm builds) is tested against. Slow on purpose; never used by the API.
#pragma once

#include "xattn/sdpa.hpp"

namespace xattn {

// Same arguments, validation and semantics as scaled_dot_product_attention; the weights
// are always returned. Throws std::invalid_argument like the API.
AttentionResult reference_sdpa(const xt::xarray<float>& query, const xt::xarray<float>& key,
                               const xt::xarray<float>& value, const SdpaOptions& options = {});

}  // namespace xattn
