// The row operations of linear, layer_norm and TransformerEncoderLayer (layer_ops.hpp).
//
// The elementwise passes are plain loops without branches, which the compiler vectorises (SIMD128 in the wasm
// builds): GELU's erf is a rational function of float32 operations, its derivative's exp the softmax's
// (gelu.hpp).
#include "layer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gelu.hpp"
#include "kernels/dropout_hash.hpp"
#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"
#include "xattn/layers.hpp"

namespace xattn::detail {
namespace {

// Elementwise passes go in tasks of this many values: the same cut at every thread count.
constexpr std::size_t kChunk = 4096;

// LayerNorm's work per value, in the products' FLOPs (what useful_workers weighs): its float64 passes over a row
// run at a small fraction of a product kernel's speed, so a (768, 128) batch, which takes a thread a good part of
// a millisecond, is worth a second one.
constexpr double kNormWork = 40.0, kNormBackwardWork = 60.0;

// Runs f(begin, end) over [0, n) in chunks of kChunk values, `flops_each` the work per value.
template <class F>
void for_chunks(std::size_t n, unsigned threads, double flops_each, const F& f) {
    const std::size_t tasks = (n + kChunk - 1) / kChunk;
    const double work = flops_each * static_cast<double>(n);
    kernels::parallel_for(tasks, kernels::useful_workers(threads, tasks, work), work, [&](std::size_t t, unsigned) {
        const std::size_t begin = t * kChunk;
        f(begin, std::min(n, begin + kChunk));
    });
}

kernels::LinearProblem problem(unsigned threads) {
    kernels::LinearProblem p;
    p.threads = threads;
    return p;
}

// Y (rows, out) = X (rows, in) · Wᵀ + b, the forward.
kernels::LinearProblem forward_problem(unsigned threads, std::size_t rows, std::size_t in, std::size_t out) {
    kernels::LinearProblem p = problem(threads);
    p.rows = rows, p.in = in, p.out = out, p.x_stride = in, p.y_stride = out;
    return p;
}

// dX (rows, in) = dY (rows, out) · W: the kernel's X is dY (K = out), its W operand W itself stored (K, N).
kernels::LinearProblem input_grad_problem(unsigned threads, std::size_t rows, std::size_t in, std::size_t out) {
    kernels::LinearProblem p = problem(threads);
    p.rows = rows, p.in = out, p.out = in, p.x_stride = out, p.y_stride = in;
    p.w_transposed = true;
    return p;
}

// dW (out, in) = dYᵀ · X: the kernel's X is dY read down its columns (K = rows), its W operand X stored (K, N).
kernels::LinearProblem weight_grad_problem(unsigned threads, std::size_t rows, std::size_t in, std::size_t out) {
    kernels::LinearProblem p = problem(threads);
    p.rows = out, p.in = rows, p.out = in, p.x_stride = 1, p.x_k_stride = out, p.y_stride = in;
    p.w_transposed = true;
    return p;
}

}  // namespace

void Products::forward(std::size_t rows, std::size_t in, std::size_t out, const float* x, const float* w,
                       const float* b, float* y) const {
    kernels::LinearProblem p = forward_problem(threads, rows, in, out);
    p.x = x, p.w = w, p.bias = b, p.y = y;
    kernels::run_linear(*set, p, workspace);
}

void Products::input_grad(std::size_t rows, std::size_t in, std::size_t out, const float* dy, const float* w,
                          float* dx) const {
    kernels::LinearProblem p = input_grad_problem(threads, rows, in, out);
    p.x = dy, p.w = w, p.y = dx;
    kernels::run_linear(*set, p, workspace);
}

void Products::weight_grad(std::size_t rows, std::size_t in, std::size_t out, const float* dy, const float* x,
                           float* dw) const {
    kernels::LinearProblem p = weight_grad_problem(threads, rows, in, out);
    p.x = dy, p.w = x, p.y = dw;  // no rows: K = 0, and the kernel writes dW = 0
    kernels::run_linear(*set, p, workspace);
}

std::uint64_t Products::workspace_bytes(const kernels::KernelSet& set, unsigned threads, std::size_t rows,
                                        std::size_t in, std::size_t out, bool backward) {
    std::uint64_t bytes = kernels::linear_workspace_bytes(set, forward_problem(threads, rows, in, out));
    if (backward)
        bytes = std::max({bytes, kernels::linear_workspace_bytes(set, input_grad_problem(threads, rows, in, out)),
                          kernels::linear_workspace_bytes(set, weight_grad_problem(threads, rows, in, out))});
    return bytes;
}

namespace {

// Σ f(c) over c < D in float64, in four running sums (c mod 4) added pairwise at the end: a fixed order for every
// row whatever the thread count, and four chains of adds where one chain waited on each add's latency (a row's
// LayerNorm took about twice as long).
template <class F>
double sum4(std::size_t D, const F& f) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    std::size_t c = 0;
    for (; c + 4 <= D; c += 4) s0 += f(c), s1 += f(c + 1), s2 += f(c + 2), s3 += f(c + 3);
    for (; c < D; ++c) s0 += f(c);
    return (s0 + s1) + (s2 + s3);
}

// A row's mean and 1 / sqrt(var + eps), the variance biased.
struct RowStats {
    double mean, rstd;
};
RowStats row_stats(const float* xr, std::size_t D, double eps) {
    const double inv_d = 1.0 / static_cast<double>(D);
    const double mean = sum4(D, [&](std::size_t c) { return static_cast<double>(xr[c]); }) * inv_d;
    const double squares = sum4(D, [&](std::size_t c) { return (xr[c] - mean) * (xr[c] - mean); });
    return {mean, 1.0 / std::sqrt(squares * inv_d + eps)};
}

}  // namespace

void layer_norm_rows(const float* x, std::size_t rows, std::size_t D, const float* w, const float* b, double eps,
                     float* y, unsigned threads) {
    const std::size_t per_task = std::max<std::size_t>(1, kChunk / std::max<std::size_t>(D, 1));
    const std::size_t tasks = (rows + per_task - 1) / per_task;
    const double work = kNormWork * static_cast<double>(rows) * static_cast<double>(D);
    kernels::parallel_for(tasks, kernels::useful_workers(threads, tasks, work), work, [&](std::size_t t, unsigned) {
        for (std::size_t r = t * per_task, end = std::min(rows, r + per_task); r < end; ++r) {
            const float* xr = x + r * D;  // (D)
            float* yr = y + r * D;
            const RowStats stats_r = row_stats(xr, D, eps);
            const double mean = stats_r.mean, rstd = stats_r.rstd;
            for (std::size_t c = 0; c < D; ++c) {
                const double xhat = (xr[c] - mean) * rstd;
                yr[c] = static_cast<float>(xhat * (w ? w[c] : 1.0f) + (b ? b[c] : 0.0f));
            }
        }
    });
}

std::uint64_t layer_norm_backward_scratch(std::size_t rows, std::size_t D) {
    return (2 * std::uint64_t{rows} + 2 * std::uint64_t{D}) * sizeof(double);  // each row's mean and rstd, dw and db
}

void layer_norm_rows_backward(const float* x, std::size_t rows, std::size_t D, const float* w, double eps,
                              const float* dy, float* dx, bool accumulate, float* dw, float* db, void* scratch,
                              unsigned threads) {
    double* stats = static_cast<double*>(scratch);  // (rows, 2): mean, rstd
    const std::size_t per_task = std::max<std::size_t>(1, kChunk / std::max<std::size_t>(D, 1));
    const std::size_t tasks = (rows + per_task - 1) / per_task;
    const double work = kNormBackwardWork * static_cast<double>(rows) * static_cast<double>(D);
    const double inv_d = 1.0 / static_cast<double>(D);
    kernels::parallel_for(tasks, kernels::useful_workers(threads, tasks, work), work, [&](std::size_t t, unsigned) {
        for (std::size_t r = t * per_task, end = std::min(rows, r + per_task); r < end; ++r) {
            const float* xr = x + r * D;  // (D)
            const float* dyr = dy + r * D;
            float* dxr = dx + r * D;
            const RowStats stats_r = row_stats(xr, D, eps);
            const double mean = stats_r.mean, rstd = stats_r.rstd;
            stats[2 * r] = mean, stats[2 * r + 1] = rstd;
            // mean(dx̂) and mean(dx̂ · x̂), dx̂ = dy · w
            const auto dxhat_at = [&](std::size_t c) { return static_cast<double>(dyr[c]) * (w ? w[c] : 1.0f); };
            const double g = sum4(D, dxhat_at) * inv_d;
            const double gx = sum4(D, [&](std::size_t c) { return dxhat_at(c) * (xr[c] - mean) * rstd; }) * inv_d;
            for (std::size_t c = 0; c < D; ++c) {
                const double dxhat = static_cast<double>(dyr[c]) * (w ? w[c] : 1.0f);
                const float v = static_cast<float>(rstd * (dxhat - g - (xr[c] - mean) * rstd * gx));
                dxr[c] = accumulate ? dxr[c] + v : v;
            }
        }
    });
    if (!dw && !db) return;
    // Σ over rows in row order for each column, in tasks of kSumColumns columns: the same sums whatever the
    // thread count.
    constexpr std::size_t kSumColumns = 16;  // a 64-byte line of each row
    double* dw_sum = stats + 2 * rows;  // (D)
    double* db_sum = dw_sum + D;        // (D)
    const std::size_t sum_tasks = (D + kSumColumns - 1) / kSumColumns;
    const double sum_work = 0.5 * kNormBackwardWork * static_cast<double>(rows) * static_cast<double>(D);
    kernels::parallel_for(sum_tasks, kernels::useful_workers(threads, sum_tasks, sum_work), sum_work,
                          [&](std::size_t t, unsigned) {
        const std::size_t c0 = t * kSumColumns, c1 = std::min(D, c0 + kSumColumns);
        std::fill(dw_sum + c0, dw_sum + c1, 0.0);
        std::fill(db_sum + c0, db_sum + c1, 0.0);
        for (std::size_t r = 0; r < rows; ++r) {
            const float* xr = x + r * D;
            const float* dyr = dy + r * D;
            const double mean = stats[2 * r], rstd = stats[2 * r + 1];
            for (std::size_t c = c0; c < c1; ++c) {
                dw_sum[c] += dyr[c] * ((xr[c] - mean) * rstd);
                db_sum[c] += dyr[c];
            }
        }
        for (std::size_t c = c0; c < c1; ++c) {
            if (dw) dw[c] = static_cast<float>(dw_sum[c]);
            if (db) db[c] = static_cast<float>(db_sum[c]);
        }
    });
}

void activation_forward(Activation activation, const float* f, std::size_t n, float* g, unsigned threads) {
    if (activation == Activation::relu) {
        for_chunks(n, threads, 1.0, [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) g[i] = f[i] > 0.0f ? f[i] : 0.0f;  // NaN gives 0, as max(x, 0)
        });
        return;
    }
    for_chunks(n, threads, 30.0, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) g[i] = gelu(f[i]);
    });
}

void activation_backward(Activation activation, const float* f, float* d, std::size_t n, unsigned threads) {
    if (activation == Activation::relu) {
        for_chunks(n, threads, 1.0, [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) d[i] = f[i] > 0.0f ? d[i] : 0.0f;
        });
        return;
    }
    for_chunks(n, threads, 50.0, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) d[i] *= gelu_derivative(f[i]);
    });
}

void dropout_in_place(std::uint64_t seed, double p, float* x, std::size_t n, unsigned threads) {
    if (p <= 0.0) return;
    const float keep_scale = static_cast<float>(1.0 / (1.0 - p));
    const std::uint64_t threshold = kernels::dropout_threshold(p);  // dropout_keeps' rule, as the kernels apply it
    for_chunks(n, threads, 20.0, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i)
            x[i] = kernels::dropout_keep(seed, threshold, i) ? x[i] * keep_scale : 0.0f;
    });
}

void column_sums(const float* x, std::size_t rows, std::size_t cols, float* sums, unsigned threads) {
    constexpr std::size_t kBlock = 32;  // columns a task sums, down the rows together: two 64-byte lines a row
    const std::size_t tasks = (cols + kBlock - 1) / kBlock;
    const double work = 8.0 * static_cast<double>(rows) * static_cast<double>(cols);  // float64 adds, not FMAs
    kernels::parallel_for(tasks, kernels::useful_workers(threads, tasks, work), work, [&](std::size_t t, unsigned) {
        const std::size_t c0 = t * kBlock, nc = std::min(kBlock, cols - c0);
        double acc[kBlock] = {};
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < nc; ++c) acc[c] += x[r * cols + c0 + c];
        for (std::size_t c = 0; c < nc; ++c) sums[c0 + c] = static_cast<float>(acc[c]);
    });
}

void add(const float* a, const float* b, std::size_t n, float* y) {
    for (std::size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace xattn::detail
