// Attention problems around the kernels' edges, shared by the backward tests and the blocking tests: sizes around
// the query groups (16 lanes), the key tiles (up to 96 keys) and vector widths, each with a variant of options
// (masks of every broadcast, GQA, both causal alignments with rows that see no key, dropout, a batch element
// whose every key is padded).
#pragma once

#include <cstddef>

#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "random_inputs.hpp"
#include "xattn/xattn.hpp"

namespace test_inputs {

struct SdpaCase {
    xattn::Shape q, k, v;
    int variant;  // sdpa_case_options
};

inline const SdpaCase kEdgeCases[] = {
    {{2, 17, 8}, {2, 97, 8}, {2, 97, 8}, 0},          {{1, 2, 33, 5}, {1, 2, 193, 5}, {1, 2, 193, 3}, 1},
    {{2, 40, 16}, {2, 31, 16}, {2, 31, 7}, 2},        {{3, 16, 12}, {3, 100, 12}, {3, 100, 12}, 3},
    {{1, 6, 21, 8}, {1, 2, 65, 8}, {1, 2, 65, 9}, 4}, {{2, 64, 64}, {2, 64, 64}, {2, 64, 64}, 5},
    {{2, 9, 4}, {2, 130, 4}, {2, 130, 4}, 6},
};

// The options of `variant` for L queries and S keys (masks drawn from `seed`, which advances).
inline xattn::SdpaOptions sdpa_case_options(int variant, std::size_t L, std::size_t S, unsigned& seed) {
    xattn::SdpaOptions o;
    switch (variant) {
        case 1: o.is_causal = true; break;  // top-left, L < S
        case 2: o.is_causal = true, o.causal_alignment = xattn::CausalAlignment::bottom_right; break;  // L > S
        case 3: o.attn_mask = xattn::Mask::boolean(randn({L, S}, seed++) > -0.8f); break;
        case 4: o.enable_gqa = true, o.dropout_p = 0.3, o.seed = 5; break;
        case 5: o.attn_mask = xattn::Mask::additive(randn({2, 1, S}, seed++)); break;  // key padding
        case 6: {  // key padding that hides every key of batch element 1: fully masked rows
            xt::xarray<bool> keep = xt::ones<bool>(xattn::Shape{2, 1, S});
            xt::view(keep, 1) = false;
            o.attn_mask = xattn::Mask::boolean(keep);
            break;
        }
        default: break;
    }
    return o;
}

}  // namespace test_inputs
