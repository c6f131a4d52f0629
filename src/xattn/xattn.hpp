// xattn: scaled dot-product and multi-head attention with PyTorch's semantics.
#pragma once

#include "xattn/dims.hpp"
#include "xattn/kv_cache.hpp"
#include "xattn/layers.hpp"
#include "xattn/mha.hpp"
#include "xattn/rotary.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/sdpa_backward.hpp"
#include "xattn/threads.hpp"
#include "xattn/transformer.hpp"

namespace xattn {
// This library's version, as package.json gives it (e.g. "0.1.0").
const char* version();
}
