// Picks the kernel set for this CPU and runs plans with it; run_sdpa, the API's entry to the kernels,
// lives here too. Built without special flags, so it runs on any CPU; it calls into an arch file only
// after checking the CPU has that instruction set.
#include <atomic>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

#include "kernels/carver.hpp"
#include "kernels/dropout_hash.hpp"
#include "kernels/kernels.hpp"

namespace xattn::kernels {

namespace {

// GCC's and clang's checks include the OS's: AVX-512F counts only where XGETBV shows the OS saves the
// 512-bit registers.
bool cpu_has_avx512f() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

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

// Attention scratch is O(tile): Qᵀ panels (E, 64) and output rows (64, Ev) of one query block, well under
// 1 MiB for heads up to 1024 wide. Only heads hundreds of thousands wide would need more than this; they run
// on the row kernel's O(S) scratch instead.
constexpr std::size_t kMaxAttentionScratch = std::size_t{64} << 20;

bool attention_on_rows(const KernelSet& set, const AttentionProblem& p) {
    // First a 64-bit bound (Qᵀ panels and output rows of up to 64 queries, plus the tiles), so that the
    // kernel's own size_t arithmetic only ever sees heads small enough not to overflow in wasm32.
    const std::uint64_t bound = (std::uint64_t{p.E} + p.Ev + 64) * 64 * 4 * sizeof(float);
    return bound > kMaxAttentionScratch || set.attention_workspace(p) > kMaxAttentionScratch;
}

}  // namespace

std::vector<const KernelSet*> available_kernels() {
    std::vector<const KernelSet*> sets;
    if (avx512_kernels() && cpu_has_avx512f()) sets.push_back(avx512_kernels());
    if (avx2_kernels() && cpu_has_avx2_fma()) sets.push_back(avx2_kernels());
    if (sse41_kernels() && cpu_has_sse41()) sets.push_back(sse41_kernels());
    if (sse41_kernels_16() && cpu_has_sse41()) sets.push_back(sse41_kernels_16());
    sets.push_back(&scalar_kernels());
    return sets;
}

const KernelSet& best_kernels() {
    static const KernelSet* const best = blocking_for(available_kernels().front(), many_vector_registers());
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

#ifdef XATTN_TESTING
const KernelProbes& probes_of(const KernelSet& set) {
    if (&set == avx512_kernels()) return *avx512_probes();
    if (&set == avx2_kernels()) return *avx2_probes();
    if (&set == sse41_kernels() || &set == sse41_kernels_16()) return *sse41_probes();
    return scalar_probes();
}
#endif

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
    p.threads = plan.threads;
    return p;
}

std::uint64_t attention_workspace_bytes(const KernelSet& set, const SdpaPlan& plan) {
    if (plan.batch == 0 || plan.L == 0) return 0;
    const AttentionProblem p = attention_problem(plan, nullptr, nullptr, nullptr, MaskRef{}, nullptr, nullptr);
    return attention_on_rows(set, p) ? sdpa_rows_workspace_bytes(plan) : set.attention_workspace(p);
}

void run_attention(const KernelSet& set, const SdpaPlan& plan, const float* query, const float* key,
                   const float* value, const MaskRef& mask, float* output, float* weights, void* workspace) {
    if (plan.batch == 0 || plan.L == 0) return;
    const AttentionProblem p = attention_problem(plan, query, key, value, mask, output, weights);
    if (attention_on_rows(set, p)) return run_sdpa_rows(plan, query, key, value, mask, output, weights, workspace);
    set.attention(p, workspace);
}

void run_attention(const KernelSet& set, const SdpaPlan& plan, const float* query, const float* key,
                   const float* value, const MaskRef& mask, float* output, float* weights) {
    std::vector<unsigned char> workspace = allocate_workspace(attention_workspace_bytes(set, plan));
    run_attention(set, plan, query, key, value, mask, output, weights, workspace.data());
}

std::vector<unsigned char> allocate_workspace(std::uint64_t bytes) {
    if (bytes > std::numeric_limits<std::size_t>::max()) throw std::bad_alloc();
    return std::vector<unsigned char>(static_cast<std::size_t>(bytes));
}

std::uint64_t linear_workspace_bytes(const KernelSet& set, const LinearProblem& problem) {
    return problem.rows == 0 || problem.out == 0 ? 0 : set.linear_workspace(problem);
}

void run_linear(const KernelSet& set, const LinearProblem& problem, void* workspace) {
    if (problem.rows == 0 || problem.out == 0) return;
    set.linear(problem, workspace);
}

void run_linear(const KernelSet& set, const LinearProblem& problem) {
    std::vector<unsigned char> workspace = allocate_workspace(linear_workspace_bytes(set, problem) + Carver::kSlack);
    Carver aligned(workspace.data());  // the float64 sums want (at least) 8-byte alignment
    run_linear(set, problem, aligned.take<unsigned char>(0));
}

}  // namespace xattn::kernels

namespace xattn {

const kernels::KernelSet& plan_kernels(const SdpaPlan& plan) {
    return plan.kernel_set ? *plan.kernel_set : kernels::active_kernels();
}

void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value, const MaskRef& mask,
              float* output, float* weights, void* workspace) {
    kernels::run_attention(plan_kernels(plan), plan, query, key, value, mask, output, weights, workspace);
}

void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value, const MaskRef& mask,
              float* output, float* weights) {
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_sdpa(plan, query, key, value, mask, output, weights, workspace.data());
}

}  // namespace xattn
