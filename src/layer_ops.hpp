// The row operations linear, layer_norm and TransformerEncoderLayer are made of: products on the kernels'
// linear product, LayerNorm rows, the activations, dropout and column sums. Not installed: an implementation
// header. Every pass cuts its rows into the same tasks at any thread count, and each task's numbers come out of
// the same code, so results are bit-identical at every count (xattn/threads.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace xattn {

namespace kernels {
struct KernelSet;
}

enum class Activation;  // xattn/layers.hpp

namespace detail {

// The three products of a linear layer, forward and backward, on the kernels' linear product (float32 sums,
// threaded by blocks of output rows). W is stored (out, in) as PyTorch stores it; nothing is transposed.
struct Products {
    const kernels::KernelSet* set;
    unsigned threads;
    void* workspace;  // workspace_bytes of the largest product run with it

    // Y (rows, out) = X (rows, in) · Wᵀ + b (b may be null).
    void forward(std::size_t rows, std::size_t in, std::size_t out, const float* x, const float* w, const float* b,
                 float* y) const;
    // dX (rows, in) = dY (rows, out) · W (out, in).
    void input_grad(std::size_t rows, std::size_t in, std::size_t out, const float* dy, const float* w,
                    float* dx) const;
    // dW (out, in) = dYᵀ (out, rows) · X (rows, in).
    void weight_grad(std::size_t rows, std::size_t in, std::size_t out, const float* dy, const float* x,
                     float* dw) const;
    // Scratch for the largest of the three for these sizes (forward only: the first alone).
    static std::uint64_t workspace_bytes(const kernels::KernelSet& set, unsigned threads, std::size_t rows,
                                         std::size_t in, std::size_t out, bool backward);
};

// LayerNorm of `rows` rows of D floats: y = (x − mean) · rstd · w + b, rstd = 1 / sqrt(var + eps), the mean and
// the biased variance in float64. w and b may be null (1 and 0).
void layer_norm_rows(const float* x, std::size_t rows, std::size_t D, const float* w, const float* b, double eps,
                     float* y, unsigned threads);
// Its backward for dy: dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ · x̂)) with dx̂ = dy · w, written to dx, or added to
// it when `accumulate`. dw and db (D floats each, or null) get Σ_rows dy · x̂ and Σ_rows dy. `scratch` holds
// layer_norm_backward_scratch(rows, D) bytes.
void layer_norm_rows_backward(const float* x, std::size_t rows, std::size_t D, const float* w, double eps,
                              const float* dy, float* dx, bool accumulate, float* dw, float* db, void* scratch,
                              unsigned threads);
std::uint64_t layer_norm_backward_scratch(std::size_t rows, std::size_t D);

// g = activation(f), n values. GELU is the exact (erf) form, 0.5 · x · (1 + erf(x / sqrt 2)), with erf in
// float32 within a few units in the last place (gelu.hpp).
void activation_forward(Activation activation, const float* f, std::size_t n, float* g, unsigned threads);
// d *= activation'(f), n values: the gradient reaching g becomes the one reaching f. ReLU's derivative is 0 at
// 0, as PyTorch's.
void activation_backward(Activation activation, const float* f, float* d, std::size_t n, unsigned threads);

// x[i] = keep(i) ? x[i] / (1 − p) : 0 for i < n, keep(i) = dropout_keeps(seed, p, i): position i is the element's
// index in the tensor as laid out.
void dropout_in_place(std::uint64_t seed, double p, float* x, std::size_t n, unsigned threads);

// sums (cols) = Σ_r x (rows, cols), in float64, each column's rows in order (the same sums at any thread count).
void column_sums(const float* x, std::size_t rows, std::size_t cols, float* sums, unsigned threads);

// y = a + b, n values (a residual connection).
void add(const float* a, const float* b, std::size_t n, float* y);

}  // namespace detail
}  // namespace xattn
