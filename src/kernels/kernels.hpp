// The fast kernels behind run_sdpa and MultiheadAttention, one set per instruction set:
//   avx512f    native x86-64 with AVX-512F (kernels/arch_avx512.cpp, built with -mavx512f -mavx2 -mfma)
//   avx2+fma   native x86-64 with AVX2 and FMA (kernels/arch_avx2.cpp, built with -mavx2 -mfma)
//   sse4.1     native x86 with SSE4.1, and WebAssembly SIMD128 (Emscripten lowers SSE4.1 to it), in blocks of
//              8 accumulators, and as sse4.1/16 in blocks of 16 (the same bits) for CPUs with 32 vector registers
//   scalar     everything else, e.g. the wasm build without -msimd128
// All four run the same tiled algorithm (kernels/attention.hpp, kernels/linear.hpp); the tests
// check every set this machine can run against the float64 reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xattn::kernels {

// The kernels' own words for what the core's plans decided (they include nothing from the public headers, whose
// containers and inline functions would be compiled once per instruction set; see dropout_hash.hpp).
enum class MaskType : std::uint8_t { none, boolean, additive };
// Which scores a call returns beside its output (xattn::ScoresStage).
enum class ScoresKind : std::uint8_t { none, scaled, softcapped, biased };

// Where a mask's elements are, resolved when the call was planned. Element (problem b, row i, key j) of the plan's
// problems is at problem_offset(b) + i · query_stride + j · key_stride (stacked rows find their problem and row by
// AttentionRules::stack). problem_offset walks the weights' leading dims (…), outermost first: outer_rank extents
// and the mask's step along each (0 where it broadcasts).
struct MaskLayout {
    MaskType type = MaskType::none;
    const std::uint8_t* bools = nullptr;  // type boolean: non-zero = this query may attend to this key
    const float* values = nullptr;        // type additive: added to the scaled scores
    const std::size_t* outer_extents = nullptr;
    const std::size_t* outer_strides = nullptr;
    std::size_t outer_rank = 0;
    std::size_t query_stride = 0;  // from query i to i + 1
    std::size_t key_stride = 0;    // from key j to j + 1 (0 or 1)
};

// One attention call in plain numbers and pointers, in three parts: what it reads, the rules its scores follow,
// and what it writes.
struct AttentionInputs {
    std::size_t batch = 0, L = 0, S = 0, E = 0, Ev = 0;
    std::size_t q_heads = 1, kv_heads = 1;  // GQA: query problem b reads kv problem b / q_heads · kv_heads + …
    const float* query = nullptr;           // (batch, L, E)
    const float* key = nullptr;             // (kv problems, S, E)
    const float* value = nullptr;           // (kv problems, S, Ev)
    // A KV cache's keys and values: float16 storage instead of key / value (then those are null), in the blocks
    // of kv_layout.hpp instead of rows, and kv problems key_stride / value_stride elements apart (0: S·E and
    // S·Ev, packed).
    bool kv_float16 = false;  // keys and values are key16 / value16 (the workspace widens their tiles)
    bool kv_blocked = false;  // keys and values in kv_layout.hpp's blocks (the tiled kernels gather their tiles)
    const std::uint16_t* key16 = nullptr;
    const std::uint16_t* value16 = nullptr;
    std::size_t key_stride = 0, value_stride = 0;
    // A KV cache's word on its positions (S), or null: bit 0 set where some key holds inf or NaN, bit 1 where
    // some value does (any problem). The decoding kernel then skips its own scans of the tiles, and reads
    // float16 tiles with neither bit in place (attention_decode.hpp).
    const std::uint8_t* kv_position_flags = nullptr;  // (batch elements, kv_capacity): one row per element
    // A KV cache's ring of kv_capacity slots (a rolling buffer, or one truncated after it rolled), or null: slots
    // are positions. Two per batch element: the slot of its oldest key (key 0), and how many slots from 0 it uses;
    // key j sits in slot (start + j) % kv_capacity.
    const std::uint32_t* kv_ring = nullptr;
    std::size_t kv_capacity = 0;
    const float* grad_output = nullptr;     // the backward's dO (batch, L, Ev)
};

// Row i of problem b sits at position p = i + offset among the keys: offset 0, or with bottom_right its batch
// element's key count (key_lengths, else S) − L. It sees key j < that count with (causal) j <= p and
// p − window_left <= j <= p + window_right (−1: that side open): one run of keys per row, which moves right as
// i grows, so every tile that no row of a group can see is skipped.
struct AttentionRules {
    float scale = 1.0f;
    float softcap = 0.0f;                   // c > 0: s = c · tanh(s / c), before the mask
    bool causal = false;
    bool bottom_right = false;
    std::int64_t window_left = -1, window_right = -1;
    std::size_t heads = 1;                  // problems per batch element (query dim -3)
    const std::int32_t* key_lengths = nullptr;  // (batch / heads) or null: S keys for every element
    const float* alibi_slopes = nullptr;    // (heads) or null: + slope · (j − p)
    // The decoding kernel stacks the `stack` query heads of a key/value head as rows of one problem: row r of
    // problem b is row r % stack_rows of the rules' (and the mask's) problem b · stack + r / stack_rows. Elsewhere
    // stack is 1 and stack_rows is L.
    std::size_t stack = 1, stack_rows = 0;
    MaskLayout mask;
    bool dropout = false;
    std::uint64_t seed = 0, dropout_threshold = 0;
    float keep_scale = 1.0f;                // 1 / (1 - p)
};

struct AttentionOutputs {
    float* output = nullptr;                // (batch, L, Ev)
    float* weights = nullptr;               // (batch, L, S) or null: then nothing (L, S) is stored
    float* lse = nullptr;                   // (batch, L) or null: each row's log-sum-exp
    float* scores = nullptr;                // (batch, L, S) or null: the scores at stage scores_kind
    ScoresKind scores_kind = ScoresKind::none;
    // The backward (attention_backward): dQ out, dK and dV added to (GQA groups share them).
    float* grad_query = nullptr;            // (batch, L, E)
    float* grad_key = nullptr;              // (kv problems, S, E)
    float* grad_value = nullptr;            // (kv problems, S, Ev)
};

struct AttentionProblem {
    AttentionInputs in;
    AttentionRules rules;
    AttentionOutputs out;
    const unsigned char* skip = nullptr;    // (batch) or null: problems the backward leaves to another path
    // Threads the run may use (the plan's count): the workspace holds one scratch per worker it wakes.
    unsigned threads = 1;
};

// Y (rows, out) = X (rows, in) · Wᵀ + bias, W stored (out, in) as PyTorch stores Linear weights. Either operand
// may be read transposed in place, so that a backward's products need no transposed copies:
//   dX (rows, in) = dY (rows, out) · W (out, in)     W stored (K, N): w_transposed
//   dW (out, in)  = dYᵀ (out, rows) · X (rows, in)   X read down its columns (x_stride 1, x_k_stride out), and
//                                                    the operand X stored (K, N): w_transposed
struct LinearProblem {
    std::size_t rows = 0, in = 0, out = 0;
    const float* x = nullptr;
    std::size_t x_stride = 0;    // floats from X (r, k) to X (r + 1, k)
    std::size_t x_k_stride = 1;  // … and from X (r, k) to X (r, k + 1)
    const float* w = nullptr;    // (out, in), or (in, out) with w_transposed
    bool w_transposed = false;
    const float* bias = nullptr;  // (out) or null
    float* y = nullptr;
    std::size_t y_stride = 0;
    unsigned threads = 1;  // as AttentionProblem::threads
};

struct KernelSet {
    const char* name;
    // Scratch each call needs, in bytes: O(tiles), never O(L·S).
    std::size_t (*attention_workspace)(const AttentionProblem&);
    void (*attention)(const AttentionProblem&, void* workspace);
    std::uint64_t (*linear_workspace)(const LinearProblem&);
    void (*linear)(const LinearProblem&, void* workspace);
    // The same attention for a few query rows (decoding from a KV cache; attention_decode.hpp), vectorised
    // along E where the wide tiles would compute mostly empty query lanes: stacked rows, each under its own
    // head's rules and mask row; no dropout, weights or scores.
    std::size_t (*few_rows_workspace)(const AttentionProblem&);
    void (*few_rows)(const AttentionProblem&, void* workspace);
    // The fused backward (attention_backward.hpp): needs output and lse from the forward.
    std::uint64_t (*backward_workspace)(const AttentionProblem&);
    void (*backward)(const AttentionProblem&, void* workspace);
};

// Defined in the per-arch files; null when this build has no such kernels.
const KernelSet* avx512_kernels();
const KernelSet* avx2_kernels();
const KernelSet* sse41_kernels();
const KernelSet* sse41_kernels_16();  // the SSE4.1 / wasm set in blocks of 16 accumulators
const KernelSet& scalar_kernels();

// The fastest set this build and CPU can run (decided once): the first of available_kernels(), in the
// register blocking that suits the vector registers this code runs with (blocking_for; blocking.cpp).
const KernelSet& best_kernels();
// Whether the code runs where 32 vector registers are at hand (Arm and RISC-V: an engine's arm64 code, or
// native code there) rather than x86's 16, told by the sign of the quiet NaN an invalid operation makes
// (blocking.cpp).
bool many_vector_registers();
// The blocking of `set` to run with that many registers: the SSE4.1 / wasm SIMD128 set in blocks of 16
// accumulators where there are 32 registers, else `set` itself (the blockings give the same bits).
const KernelSet* blocking_for(const KernelSet* set, bool many_registers);
// Every set this build and CPU can run, the fastest instruction set first (the SSE4.1 set in its two blockings
// in a row, blocks of 8 accumulators first; best_kernels picks between them).
std::vector<const KernelSet*> available_kernels();
// The set run_sdpa and MultiheadAttention use: best_kernels(), or in a testing build the one use_kernels chose.
const KernelSet& active_kernels();
#ifdef XATTN_TESTING
// A testing build's (the doctest suite, the fuzzers, the benchmark): run every later call with `set`, one of
// available_kernels() (null: back to best_kernels()). Process-wide.
void use_kernels(const KernelSet* set);
#endif

// A workspace of `bytes` for the allocating entry points; throws std::bad_alloc where size_t cannot hold it.
std::vector<unsigned char> allocate_workspace(std::uint64_t bytes);
// Bytes of scratch run_linear uses for `problem` with `set`: O(blocks), never O(rows · out).
std::uint64_t linear_workspace_bytes(const KernelSet& set, const LinearProblem& problem);
// Runs one linear product in `workspace` (linear_workspace_bytes of it). Allocates nothing.
void run_linear(const KernelSet& set, const LinearProblem& problem, void* workspace);
// The same with a workspace of its own (tests and benchmarks; may throw std::bad_alloc).
void run_linear(const KernelSet& set, const LinearProblem& problem);

}  // namespace xattn::kernels
