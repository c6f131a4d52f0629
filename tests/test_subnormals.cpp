// Ordinary inputs must not make subnormal floats inside the kernels. Intel cores run each subnormal result
// (and each subnormal operand) through a microcode assist of about a hundred cycles, AMD cores do not: a
// scan that summed squares of values scaled by 2^-64 made every kernel set 1.5-6x slower on an Intel Xeon
// and nowhere else, with the same results bit for bit. No result can show it and no timing belongs in a
// test, so this reads the x86 status flags instead: MXCSR's DE (a subnormal operand) and UE (a tiny
// result) stay clear over forward, backward, decoding and projections on every kernel set.
#include <doctest/doctest.h>

#include <string>

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "kernels/kernels.hpp"
#include "random_inputs.hpp"
#include "xattn/kv_cache.hpp"
#include "xattn/sdpa.hpp"
#include "xattn/sdpa_backward.hpp"
#include "xattn/threads.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define XATTN_TEST_MXCSR 1
#endif

namespace {

using test_inputs::randn;
using test_inputs::rand_bool;

#ifdef XATTN_TEST_MXCSR
constexpr unsigned kDenormalFlag = 0x02, kUnderflowFlag = 0x10, kAllFlags = 0x3f;

// Runs `work` on this thread with the sticky flags cleared, and says which of DE and UE it raised.
template <class Work>
std::string subnormal_flags_of(Work&& work) {
    _mm_setcsr(_mm_getcsr() & ~kAllFlags);
    work();
    const unsigned csr = _mm_getcsr();
    std::string raised;
    if (csr & kDenormalFlag) raised += "DE (a subnormal operand) ";
    if (csr & kUnderflowFlag) raised += "UE (a tiny result)";
    return raised;
}

struct UseKernels {
    explicit UseKernels(const xattn::kernels::KernelSet* set) { xattn::kernels::use_kernels(set); }
    ~UseKernels() { xattn::kernels::use_kernels(nullptr); }
};

// The calling thread does all the work, so its flags see every operation.
struct OneThread {
    unsigned before = xattn::num_threads();
    OneThread() { xattn::set_num_threads(1); }
    ~OneThread() { xattn::set_num_threads(before); }
};
#endif

}  // namespace

TEST_CASE("kernels: ordinary inputs make no subnormal operand or result in any set (no Intel FP assists)") {
#ifndef XATTN_TEST_MXCSR
    MESSAGE("not an x86 build: the subnormal status flags are read from x86's MXCSR only");
#else
    const OneThread one;
    // N(0, 1) data, E = 64: scores of a few units, weights from about 1e-3 to 1, several key tiles.
    const auto q = randn({2, 4, 70, 64}, 901), k = randn({2, 2, 300, 64}, 902), v = randn({2, 2, 300, 48}, 903);
    const auto dO = randn({2, 4, 70, 48}, 904);
    for (const xattn::kernels::KernelSet* set : xattn::kernels::available_kernels()) {
        const UseKernels use(set);
        const std::string name = set->name;
        for (bool weights : {false, true}) {
            xattn::SdpaOptions o;
            o.enable_gqa = true;
            o.need_weights = weights;
            CHECK_MESSAGE(subnormal_flags_of([&] { xattn::scaled_dot_product_attention(q, k, v, o); }).empty(),
                          name << " plain, weights " << weights);
            // Masked and causal scores go through exp as -inf; dropout scales the kept weights.
            o.attn_mask = xattn::Mask::boolean(rand_bool({70, 300}, 0.7, 905));
            o.is_causal = false;
            o.dropout_p = 0.1;
            o.seed = 7;
            CHECK_MESSAGE(subnormal_flags_of([&] { xattn::scaled_dot_product_attention(q, k, v, o); }).empty(),
                          name << " mask and dropout, weights " << weights);
            o.attn_mask = xattn::Mask();
            o.dropout_p = 0.0;
            o.is_causal = true;
            CHECK_MESSAGE(subnormal_flags_of([&] { xattn::scaled_dot_product_attention(q, k, v, o); }).empty(),
                          name << " causal, weights " << weights);
        }
        xattn::SdpaOptions o;
        o.enable_gqa = true;
        o.is_causal = true;
        const std::string raised =
            subnormal_flags_of([&] { xattn::scaled_dot_product_attention_backward(q, k, v, dO, o); });
        CHECK_MESSAGE(raised.empty(), name << " backward: " << raised);

        for (xattn::CacheDtype dtype : {xattn::CacheDtype::float32, xattn::CacheDtype::float16}) {
            xattn::KvCacheConfig cfg;
            cfg.batch = 2, cfg.kv_heads = 2, cfg.head_dim = 64, cfg.value_dim = 48, cfg.capacity = 300, cfg.dtype = dtype;
            xattn::KvCache cache(cfg);
            // Values under 2^-14 in magnitude are subnormal halves: not ordinary data in float16 storage (the
            // kernel reads a half's bits as value · 2^-112, subnormal for those as for any subnormal input).
            // N(0, 1) data has a few; move them to 2^-13 with their sign.
            auto normal_half = [](const xt::xarray<float>& a) {
                return xt::eval(xt::where(xt::abs(a) < 0x1p-13f, xt::where(a < 0.0f, -0x1p-13f, 0x1p-13f), a));
            };
            if (dtype == xattn::CacheDtype::float16) cache.append(normal_half(k), normal_half(v));
            else cache.append(k, v);
            xattn::KvAttendOptions ao;
            ao.is_causal = true;
            const auto step = xt::eval(xt::view(q, xt::all(), xt::all(), xt::range(69, 70), xt::all()));  // (2, 4, 1, 64)
            const std::string flags = subnormal_flags_of([&] { cache.attend(step, ao); });
            CHECK_MESSAGE(flags.empty(), name << " decoding step, float16 storage " << (dtype == xattn::CacheDtype::float16)
                                              << ": " << flags);
        }

        const auto x = randn({70, 64}, 906), w = randn({48, 64}, 907), bias = randn({48}, 908);
        xt::xarray<float> y = xt::xarray<float>::from_shape({70, 48});
        xattn::kernels::LinearProblem p;
        p.rows = 70, p.in = 64, p.out = 48;
        p.x = x.data(), p.x_stride = 64, p.w = w.data(), p.bias = bias.data(), p.y = y.data(), p.y_stride = 48;
        CHECK_MESSAGE(subnormal_flags_of([&] { xattn::kernels::run_linear(*set, p); }).empty(), name << " linear");
    }
#endif
}
