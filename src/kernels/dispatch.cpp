// Picks the kernel set for this CPU, and runs projections with it. Built without special flags, so it runs on
// any CPU; it calls into an arch file only after checking the CPU has that instruction set.
#include <atomic>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

#include "kernels/carver.hpp"
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

#ifdef XATTN_TESTING
namespace {
std::atomic<const KernelSet*> chosen{nullptr};
}  // namespace

const KernelSet& active_kernels() {
    const KernelSet* set = chosen.load(std::memory_order_relaxed);
    return set ? *set : best_kernels();
}

void use_kernels(const KernelSet* set) { chosen.store(set, std::memory_order_relaxed); }
#else
const KernelSet& active_kernels() { return best_kernels(); }
#endif

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
