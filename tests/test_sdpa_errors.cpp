// Every invalid scaled_dot_product_attention call is refused with a message naming the argument and shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <xtensor/xbuilder.hpp>

#include "errors.hpp"
#include "golden.hpp"

namespace {

using xattn::Shape;
xt::xarray<float> zeros(const Shape& s) { return xt::zeros<float>(s); }

void refuse(const Shape& q, const Shape& k, const Shape& v, const xattn::SdpaOptions& o,
            std::initializer_list<std::string> fragments) {
    check_refused([&] { xattn::scaled_dot_product_attention(zeros(q), zeros(k), zeros(v), o); }, fragments);
    // The reference refuses the same calls with the same words.
    check_refused([&] { xattn::reference_sdpa(zeros(q), zeros(k), zeros(v), o); }, fragments);
}

xattn::Status plan(const Shape& q, const Shape& k, const Shape& v, xattn::SdpaSettings s = {},
                   xattn::MaskKind mk = xattn::MaskKind::none, const Shape& ms = {}) {
    xattn::SdpaPlan p;
    return xattn::plan_sdpa(q, k, v, mk, ms, s, &p);
}

}  // namespace

TEST_CASE("refused: an input with fewer than 2 dims") {
    refuse({5}, {5, 4}, {5, 4}, {}, {"scaled_dot_product_attention", "query", "at least 2 dims", "(5,)"});
    refuse({3, 4}, {4}, {3, 4}, {}, {"key", "at least 2 dims", "(4,)"});
    refuse({3, 4}, {3, 4}, {}, {}, {"value", "at least 2 dims", "()"});
}

TEST_CASE("refused: key E != query E") {
    refuse({2, 5, 8}, {2, 7, 6}, {2, 7, 8}, {},
           {"scaled_dot_product_attention: key last dim 6 != query last dim 8", "(2, 5, 8)", "(2, 7, 6)"});
}

TEST_CASE("refused: value S != key S") {
    refuse({2, 5, 8}, {2, 7, 8}, {2, 6, 8}, {}, {"value dim -2 6 != key dim -2 7", "value (2, 6, 8)"});
}

TEST_CASE("refused: leading dims differ (no broadcasting between query, key and value)") {
    refuse({2, 5, 8}, {3, 7, 8}, {3, 7, 8}, {}, {"key leading dims (3,) != query leading dims (2,)"});
    refuse({2, 5, 8}, {2, 7, 8}, {1, 7, 8}, {}, {"value leading dims (1,) != key leading dims (2,)"});
    refuse({2, 5, 8}, {1, 2, 7, 8}, {1, 2, 7, 8}, {}, {"same rank", "key (1, 2, 7, 8)"});
    refuse({2, 4, 5, 8}, {2, 2, 7, 8}, {2, 2, 7, 8}, {}, {"key leading dims (2, 2)", "enable_gqa"});
}

TEST_CASE("refused: enable_gqa with query heads not a multiple of key/value heads") {
    xattn::SdpaOptions o;
    o.enable_gqa = true;
    refuse({1, 6, 4, 8}, {1, 4, 4, 8}, {1, 4, 4, 8}, o,
           {"enable_gqa: query heads 6 (dim -3) are not a multiple of key/value heads 4"});
    refuse({1, 6, 4, 8}, {1, 3, 4, 8}, {1, 2, 4, 8}, o, {"value leading dims (1, 2) != key leading dims (1, 3)"});
}

TEST_CASE("refused: a mask that does not broadcast to (…, L, S)") {
    xattn::SdpaOptions o;
    o.attn_mask = xattn::Mask::boolean(xt::ones<bool>({3, 7}));
    refuse({2, 5, 8}, {2, 7, 8}, {2, 7, 8}, o,
           {"attn_mask shape (3, 7) does not broadcast to the weights' shape (2, 5, 7)"});
    o.attn_mask = xattn::Mask::additive(xt::zeros<float>({1, 2, 5, 7}));
    refuse({2, 5, 8}, {2, 7, 8}, {2, 7, 8}, o, {"attn_mask shape (1, 2, 5, 7)"});
    o.attn_mask = xattn::Mask::additive(xt::zeros<float>({5, 6}));
    refuse({2, 5, 8}, {2, 7, 8}, {2, 7, 8}, o, {"attn_mask shape (5, 6)", "(…, L, S)"});
}

TEST_CASE("refused: attn_mask together with is_causal") {
    xattn::SdpaOptions o;
    o.attn_mask = xattn::Mask::boolean(xt::ones<bool>({5, 7}));
    o.is_causal = true;
    refuse({2, 5, 8}, {2, 7, 8}, {2, 7, 8}, o, {"attn_mask and is_causal cannot both be set", "(5, 7)"});
}

TEST_CASE("refused: dropout_p below 0, at or above 1, or NaN") {
    for (double p : {1.0, -0.1, 1.5, std::nan("")}) {
        xattn::SdpaOptions o;
        o.dropout_p = p;
        refuse({2, 3}, {2, 3}, {2, 3}, o, {"dropout_p must be in [0, 1)"});
    }
}

TEST_CASE("refused: a zero or non-finite scale") {
    for (double s : {0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), std::nan("")}) {
        xattn::SdpaOptions o;
        o.scale = s;
        refuse({2, 3}, {2, 3}, {2, 3}, o, {"scale must be finite and non-zero"});
    }
}

TEST_CASE("refused: sizes whose bytes exceed the per-tensor limit, before allocating") {
    // The inputs are small; only the weights would be 16 GiB.
    xattn::SdpaOptions o;
    o.need_weights = true;
    refuse({64, 8192, 1}, {64, 8192, 1}, {64, 8192, 1}, o,
           {"weights of shape (64, 8192, 8192) needs 17179869184 bytes", "limit of 1073741824 bytes"});
    // Without need_weights the same call is valid (the kernel never holds the (L, S) matrix).
    CHECK(plan({64, 8192, 1}, {64, 8192, 1}, {64, 8192, 1}).ok());
    // Shapes whose element count overflows 64 bits.
    const std::size_t huge = std::size_t{1} << 40;
    const xattn::Status st = plan({huge, huge, 64}, {huge, huge, 64}, {huge, huge, 64});
    CHECK(st.message().find("query of shape (1099511627776, 1099511627776, 64) needs more than 2^64 bytes") != std::string::npos);
    CHECK(plan({1 << 20, 1 << 20, 64}, {1, 1, 64}, {1, 1, 64}).message().find("scaled_dot_product_attention: key leading") !=
          std::string::npos);
    CHECK(plan({1 << 16, 1 << 16, 64}, {1 << 16, 1, 64}, {1 << 16, 1, 64}).message().find("needs 1099511627776 bytes") !=
          std::string::npos);
}

TEST_CASE("the no-throw planner reports the same refusals as the throwing API") {
    CHECK(plan({2, 5, 8}, {2, 7, 6}, {2, 7, 8}).message().find("key last dim 6 != query last dim 8") != std::string::npos);
    CHECK(plan({2, 5, 8}, {2, 7, 8}, {2, 7, 8}, {}, xattn::MaskKind::boolean, {9}).message().find("attn_mask shape (9,)") !=
          std::string::npos);
    CHECK(plan({2, 5, 8}, {2, 7, 8}, {2, 7, 8}).ok());
}
