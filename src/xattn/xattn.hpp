// xattn: scaled dot-product and multi-head attention with PyTorch's semantics.
#pragma once

#include "xattn/dims.hpp"
#include "xattn/mha.hpp"
#include "xattn/reference.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/sdpa_backward.hpp"

namespace xattn {
inline constexpr const char* kVersion = "0.1.0";
}
