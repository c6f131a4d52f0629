// Picks the kernel set for this CPU and runs plans with it; run_sdpa, the API's entry to the kernels,
// lives here too. Built without special flags, so it runs on any CPU; it calls into an arch file only
// after checking the CPU has that instruction set.
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>

#include "kernels/dropout_hash.hpp"
#include "kernels/kernels.hpp"

namespace xattn::kernels {

namespace {

bool cpu_has_avx2_fma() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

bool cpu_has_sse41() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("sse4.1");
#else
    return true;  // WebAssembly: the sse4.1 set exists only in a -msimd128 build, whose engine has SIMD
#endif
}

// A 64-byte aligned scratch buffer of `bytes` bytes; data is null when it could not be allocated
// (no exception may leave run_sdpa, and in wasm a throwing new would abort the module).
struct Workspace {
    std::unique_ptr<unsigned char[]> storage;
    void* data = nullptr;
    explicit Workspace(std::size_t bytes) : storage(new (std::nothrow) unsigned char[bytes + 64]) {
        if (!storage) return;
        const auto at = reinterpret_cast<std::uintptr_t>(storage.get());
        data = storage.get() + ((64 - at % 64) % 64);
    }
};

// Attention scratch is O(tile): Qᵀ panels (E, 64) and output rows (64, Ev) of one query block, well under
// 1 MiB for heads up to 1024 wide. Only heads hundreds of thousands wide would need more than this; they run
// on the row kernel's O(S) scratch instead, as does any call whose scratch cannot be allocated.
constexpr std::size_t kMaxAttentionScratch = std::size_t{64} << 20;

}  // namespace

std::vector<const KernelSet*> available_kernels() {
    std::vector<const KernelSet*> sets;
    if (avx2_kernels() && cpu_has_avx2_fma()) sets.push_back(avx2_kernels());
    if (sse41_kernels() && cpu_has_sse41()) sets.push_back(sse41_kernels());
    sets.push_back(&scalar_kernels());
    return sets;
}

const KernelSet& best_kernels() {
    static const KernelSet* const best = available_kernels().front();
    return *best;
}

namespace {
std::atomic<const KernelSet*> chosen{nullptr};
}  // namespace

const KernelSet& active_kernels() {
    const KernelSet* set = chosen.load(std::memory_order_relaxed);
    return set ? *set : best_kernels();
}

void use_kernels(const KernelSet* set) { chosen.store(set, std::memory_order_relaxed); }

AttentionProblem attention_problem(const SdpaPlan& plan, const float* query, const float* key, const float* value,
                                   const MaskRef& mask, float* output, float* weights) {
    AttentionProblem p;
    p.batch = plan.batch, p.L = plan.L, p.S = plan.S, p.E = plan.E, p.Ev = plan.Ev;
    p.q_heads = plan.q_heads, p.kv_heads = plan.kv_heads;
    p.scale = plan.scale;
    p.causal = plan.is_causal;
    p.causal_shift = plan.causal_alignment == CausalAlignment::top_left
                         ? 0
                         : static_cast<std::int64_t>(plan.S) - static_cast<std::int64_t>(plan.L);
    p.mask_kind = plan.mask_kind;
    p.mask_bools = mask.bools;
    p.mask_values = mask.values;
    p.plan = &plan;
    if (plan.mask_kind != MaskKind::none) {
        p.mask_query_stride = plan.mask_strides[plan.mask_strides.size() - 2];
        p.mask_key_stride = plan.mask_col_stride();
    }
    p.dropout = plan.dropout_p > 0.0;
    p.seed = plan.seed;
    p.dropout_threshold = dropout_threshold(plan.dropout_p);
    p.keep_scale = p.dropout ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    p.query = query, p.key = key, p.value = value, p.output = output, p.weights = weights;
    return p;
}

void run_attention(const KernelSet& set, const SdpaPlan& plan, const float* query, const float* key,
                   const float* value, const MaskRef& mask, float* output, float* weights) {
    if (plan.batch == 0 || plan.L == 0) return;
    const AttentionProblem p = attention_problem(plan, query, key, value, mask, output, weights);
    const std::size_t bytes = set.attention_workspace(p);
    if (bytes <= kMaxAttentionScratch) {
        Workspace ws(bytes);
        if (ws.data) return set.attention(p, ws.data);
    }
    run_sdpa_rows(plan, query, key, value, mask, output, weights);
}

void run_linear(const KernelSet& set, const LinearProblem& problem) {
    if (problem.rows == 0 || problem.out == 0) return;
    // O(blocks), under 5 MiB for out up to 10^4: allocated like MultiheadAttention's other buffers.
    std::vector<double> ws((set.linear_workspace(problem) + sizeof(double) - 1) / sizeof(double));
    set.linear(problem, ws.data());
}

}  // namespace xattn::kernels

namespace xattn {

void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value, const MaskRef& mask,
              float* output, float* weights) {
    kernels::run_attention(kernels::active_kernels(), plan, query, key, value, mask, output, weights);
}

}  // namespace xattn
