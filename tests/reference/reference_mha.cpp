#include "reference_mha.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace xattn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// How many unit roundoffs a weight may carry beside those its scores bring: the float32 exponential and the
// division by the row's sum.
constexpr double kSoftmaxUlps = 4.0;

using Flat = std::vector<double>;

// A tensor's values and the sizes of the terms that make each of them, in one row-major layout.
struct Pair {
    Flat v, m;
    explicit Pair(std::size_t n = 0) : v(n, 0.0), m(n, 0.0) {}
};

// Where row t of batch element n of an input with T rows per element and C channels sits: (T, N, C) by
// default, (N, T, C) with batch_first, (T, C) unbatched.
struct Layout {
    bool batched, batch_first;
    std::size_t N;
    std::size_t row(std::size_t n, std::size_t t, std::size_t T) const {
        return !batched ? t : batch_first ? n * T + t : t * N + n;
    }
};

// An input as (N, T, C) rows, with its magnitudes.
Pair rows_of(const xt::xarray<float>& x, const Layout& layout, std::size_t T, std::size_t C) {
    Pair p(layout.N * T * C);
    for (std::size_t n = 0; n < layout.N; ++n)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < C; ++c) {
                const double value = x.data()[layout.row(n, t, T) * C + c];
                p.v[(n * T + t) * C + c] = value;
                p.m[(n * T + t) * C + c] = std::fabs(value);
            }
    return p;
}

// (N, T, C) rows back to an input's layout and shape.
xt::xarray<double> to_layout(const Flat& rows, const Layout& layout, std::size_t T, std::size_t C,
                             const std::vector<std::size_t>& shape) {
    xt::xarray<double> out = xt::xarray<double>::from_shape(shape);
    for (std::size_t n = 0; n < layout.N; ++n)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < C; ++c) out.data()[layout.row(n, t, T) * C + c] = rows[(n * T + t) * C + c];
    return out;
}

xt::xarray<double> shaped(const Flat& values, const Shape& shape) {
    xt::xarray<double> out = xt::xarray<double>::from_shape(shape);
    std::copy(values.begin(), values.end(), out.begin());
    return out;
}

// y = x Wᵀ + b: x (R, in), W (out, in), b (out) or none -> y (R, out); the magnitudes the same way.
Pair linear(const Pair& x, std::size_t R, const Flat& W, const Flat* b, std::size_t in, std::size_t out) {
    Pair y(R * out);
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t o = 0; o < out; ++o) {
            double acc = b ? (*b)[o] : 0.0, mag = b ? std::fabs((*b)[o]) : 0.0;
            for (std::size_t i = 0; i < in; ++i) {
                acc += x.v[r * in + i] * W[o * in + i];
                mag += x.m[r * in + i] * std::fabs(W[o * in + i]);
            }
            y.v[r * out + o] = acc;
            y.m[r * out + o] = mag;
        }
    return y;
}

// The gradients through y = x Wᵀ + b, given dy (R, out): dx (R, in), dW (out, in), db (out).
struct LinearGrads {
    Pair dx, dW, db;
};
LinearGrads linear_backward(const Pair& dy, const Pair& x, std::size_t R, const Flat& W, std::size_t in, std::size_t out) {
    LinearGrads g{Pair(R * in), Pair(out * in), Pair(out)};
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t o = 0; o < out; ++o) {
            const double d = dy.v[r * out + o], dm = dy.m[r * out + o];
            g.db.v[o] += d, g.db.m[o] += dm;
            for (std::size_t i = 0; i < in; ++i) {
                g.dx.v[r * in + i] += d * W[o * in + i];
                g.dx.m[r * in + i] += dm * std::fabs(W[o * in + i]);
                g.dW.v[o * in + i] += d * x.v[r * in + i];
                g.dW.m[o * in + i] += dm * x.m[r * in + i];
            }
        }
    return g;
}

Flat parameter(const MultiheadAttention& module, const std::string& name) {
    const xt::xarray<float> p = module.parameter(name);
    return Flat(p.begin(), p.end());
}

Flat slice(const Flat& x, std::size_t begin, std::size_t n) { return Flat(x.begin() + begin, x.begin() + begin + n); }

// Head h's slice (channels h·hd … h·hd + hd − 1) of row a of x dotted with the same slice of row b of y, both
// (rows, E): the value, and the sum of its terms' sizes.
std::pair<double, double> head_dot(const Pair& x, std::size_t a, const Pair& y, std::size_t b, std::size_t E,
                                   std::size_t h, std::size_t hd) {
    double dot = 0.0, mag = 0.0;
    for (std::size_t d = 0; d < hd; ++d) {
        dot += x.v[a * E + h * hd + d] * y.v[b * E + h * hd + d];
        mag += x.m[a * E + h * hd + d] * y.m[b * E + h * hd + d];
    }
    return {dot, mag};
}

}  // namespace

ReferenceMha reference_mha(const MultiheadAttention& module, const xt::xarray<float>& query,
                           const xt::xarray<float>& key, const xt::xarray<float>& value,
                           const MhaForwardOptions& options, const xt::xarray<float>* grad_output) {
    const MhaConfig& config = module.config();
    const std::size_t E = config.embed_dim, H = config.num_heads, hd = E / H, kd = module.kdim(), vd = module.vdim();
    const bool batched = query.dimension() == 3;
    const bool bf = batched && config.batch_first;
    const std::size_t N = batched ? query.shape(bf ? 0 : 1) : 1;
    const std::size_t L = query.shape(bf ? 1 : 0), S = key.shape(bf ? 1 : 0);
    const std::size_t St = S + (config.add_bias_kv ? 1 : 0) + (config.add_zero_attn ? 1 : 0);
    const Layout layout{batched, bf, N};
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));

    // The parameters, as PyTorch stores them: W (out, in), b (out).
    Flat Wq, Wk, Wv, bq, bk, bv, bo;
    if (module.packed_in_proj()) {
        const Flat w = parameter(module, "in_proj_weight");  // (3E, E)
        Wq = slice(w, 0, E * E), Wk = slice(w, E * E, E * E), Wv = slice(w, 2 * E * E, E * E);
    } else {
        Wq = parameter(module, "q_proj_weight"), Wk = parameter(module, "k_proj_weight");
        Wv = parameter(module, "v_proj_weight");
    }
    if (config.bias) {
        const Flat b = parameter(module, "in_proj_bias");  // (3E)
        bq = slice(b, 0, E), bk = slice(b, E, E), bv = slice(b, 2 * E, E), bo = parameter(module, "out_proj.bias");
    }
    const Flat Wo = parameter(module, "out_proj.weight");  // (E, E)
    const Flat bias_k = config.add_bias_kv ? parameter(module, "bias_k") : Flat{};
    const Flat bias_v = config.add_bias_kv ? parameter(module, "bias_v") : Flat{};
    const Flat* q_bias = config.bias ? &bq : nullptr;
    const Flat* k_bias = config.bias ? &bk : nullptr;
    const Flat* v_bias = config.bias ? &bv : nullptr;
    const Flat* o_bias = config.bias ? &bo : nullptr;

    // 1. Project every row.   (N·L, E) (N·S, kdim) (N·S, vdim) -> (N, L, E), (N, S, E), (N, S, E)
    const Pair xq = rows_of(query, layout, L, E);  // (N, L, E)
    const Pair xk = rows_of(key, layout, S, kd);   // (N, S, kdim)
    const Pair xv = rows_of(value, layout, S, vd); // (N, S, vdim)
    const Pair Q = linear(xq, N * L, Wq, q_bias, E, E);     // (N, L, E)
    const Pair Kin = linear(xk, N * S, Wk, k_bias, kd, E);  // (N, S, E)
    const Pair Vin = linear(xv, N * S, Wv, v_bias, vd, E);  // (N, S, E)
    // The keys and values the heads see: the S projected rows, then bias_k / bias_v, then a zero row.
    Pair K(N * St * E), V(N * St * E);  // (N, St, E)
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t j = 0; j < St; ++j)
            for (std::size_t e = 0; e < E; ++e) {
                const std::size_t at = (n * St + j) * E + e;
                if (j < S) {
                    K.v[at] = Kin.v[(n * S + j) * E + e], K.m[at] = Kin.m[(n * S + j) * E + e];
                    V.v[at] = Vin.v[(n * S + j) * E + e], V.m[at] = Vin.m[(n * S + j) * E + e];
                } else if (j == S && config.add_bias_kv) {
                    K.v[at] = bias_k[e], K.m[at] = std::fabs(bias_k[e]);
                    V.v[at] = bias_v[e], V.m[at] = std::fabs(bias_v[e]);
                }
            }

    // What the masks add to score (n, h, i, j) of the S keys given, in MHA's polarity (a true boolean forbids:
    // -inf). is_causal stands for the top-left causal mask when no attn_mask is given.
    const MaskRef kpm = options.key_padding_mask.ref(), am = options.attn_mask.ref();
    const bool causal = options.is_causal && am.kind == MaskKind::none;
    const bool per_head = am.kind != MaskKind::none && am.shape.size() == 3;
    auto read = [](const MaskRef& m, std::size_t at) {
        if (m.kind == MaskKind::boolean) return m.bools[at] ? -kInf : 0.0;
        return static_cast<double>(m.values[at]);
    };
    auto added = [&](std::size_t n, std::size_t h, std::size_t i, std::size_t j) {
        double add = causal && j > i ? -kInf : 0.0;
        if (am.kind != MaskKind::none) add += read(am, ((per_head ? n * H + h : 0) * L + i) * S + j);
        if (kpm.kind != MaskKind::none) add += read(kpm, n * S + j);
        return add;
    };
    const double p = options.training ? config.dropout : 0.0;

    // 2-3. Per batch element and head: scores, scaled and masked, and their softmax over keys; dropout.
    //    P and Pd (N, H, L, St): the weights before and after dropout; soft (N, H, L): each row's weights'
    //    share of rounding, in unit roundoffs (kSoftmaxUlps + twice the largest score's terms).
    Flat P(N * H * L * St, 0.0), Pd(N * H * L * St, 0.0), soft(N * H * L, kSoftmaxUlps);
    Pair attn(N * L * E);  // (N, L, E): the heads' outputs, merged
    std::vector<double> s(St), sm(St);  // (St): one row's scores and the sizes of their terms
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < L; ++i) {
                const std::size_t row = (n * H + h) * L + i;
                double top = -kInf, largest = 0.0;
                for (std::size_t j = 0; j < St; ++j) {
                    // Step 1-2: the scaled product of query row i and key j, and the mask
                    const auto [dot, mag] = head_dot(Q, n * L + i, K, n * St + j, E, h, hd);
                    const double add = j < S ? added(n, h, i, j) : 0.0;  // bias_kv and zero_attn keys: never masked
                    s[j] = add == -kInf ? -kInf : scale * dot + add;
                    sm[j] = scale * mag + std::fabs(add);
                    top = std::max(top, s[j]);
                    if (s[j] != -kInf) largest = std::max(largest, sm[j]);
                }
                soft[row] = kSoftmaxUlps + 2.0 * largest;
                if (top == -kInf) continue;  // every key masked: weights 0, output 0
                // Step 3: softmax over the keys
                double sum = 0.0;
                for (std::size_t j = 0; j < St; ++j) sum += std::exp(s[j] - top);
                for (std::size_t j = 0; j < St; ++j) {
                    const std::size_t at = row * St + j;
                    P[at] = std::exp(s[j] - top) / sum;
                    const bool kept = p == 0.0 || dropout_keeps(options.seed, p, row * St + j);
                    Pd[at] = kept ? P[at] / (1.0 - p) : 0.0;
                }
                // Step 4: the weighted sum of the values
                for (std::size_t d = 0; d < hd; ++d) {
                    double acc = 0.0, mag = 0.0;
                    for (std::size_t j = 0; j < St; ++j) {
                        const double w = Pd[row * St + j];
                        if (w == 0.0) continue;  // a key with weight 0 adds nothing
                        acc += w * V.v[(n * St + j) * E + h * hd + d];
                        mag += w * soft[row] * V.m[(n * St + j) * E + h * hd + d];
                    }
                    attn.v[(n * L + i) * E + h * hd + d] = acc;
                    attn.m[(n * L + i) * E + h * hd + d] = mag;
                }
            }

    // 4. The output projection.   (N·L, E) -> (N, L, E), in the query's layout
    const Pair out = linear(attn, N * L, Wo, o_bias, E, E);  // (N, L, E)
    std::vector<std::size_t> qshape(query.shape().begin(), query.shape().end());
    ReferenceMha r;
    r.value.output = to_layout(out.v, layout, L, E, qshape);
    r.terms.output = to_layout(out.m, layout, L, E, qshape);

    // 5. The weights after dropout, per head or averaged over heads.   (N, H, L, St) or (N, L, St)
    Shape wshape = options.average_attn_weights ? Shape{N, L, St} : Shape{N, H, L, St};
    if (!batched) wshape.erase(wshape.begin());
    Flat w(options.average_attn_weights ? N * L * St : N * H * L * St, 0.0), wm(w.size(), 0.0);
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = 0; j < St; ++j) {
                    const std::size_t from = ((n * H + h) * L + i) * St + j;
                    const std::size_t to = options.average_attn_weights ? (n * L + i) * St + j : from;
                    const double share = options.average_attn_weights ? 1.0 / static_cast<double>(H) : 1.0;
                    w[to] += share * Pd[from];
                    wm[to] += share * Pd[from] * soft[(n * H + h) * L + i];
                }
    r.value.weights = shaped(w, wshape);
    r.terms.weights = shaped(wm, wshape);
    if (!grad_output) return r;

    // The backward, step by step in reverse.
    // 4. Through the output projection.   dO (N, L, E) -> d attn (N, L, E), dWo (E, E), dbo (E)
    const Pair dO = rows_of(*grad_output, layout, L, E);  // (N, L, E)
    const LinearGrads out_grads = linear_backward(dO, attn, N * L, Wo, E, E);
    const Pair& dattn = out_grads.dx;
    // 3-1. Through each head's attention: dV = Pdᵀ dattn; dS = P ⊙ (dP − D) with dP the dropout-scaled
    //    dattn Vᵀ and D = Σ_j P dP; dQ = scale · dS K, dK = scale · dSᵀ Q.
    Pair dQ(N * L * E), dK(N * St * E), dV(N * St * E);  // (N, L, E), (N, St, E), (N, St, E)
    std::vector<double> dP(St), dPm(St);  // (St): one row's dP and the sizes of its terms
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < L; ++i) {
                const std::size_t row = (n * H + h) * L + i;
                const double* g = &dattn.v[(n * L + i) * E + h * hd];
                const double* gm = &dattn.m[(n * L + i) * E + h * hd];
                double D = 0.0, Dm = 0.0;
                for (std::size_t j = 0; j < St; ++j) {
                    const double pd = Pd[row * St + j], keep = P[row * St + j] == 0.0 ? 0.0 : pd / P[row * St + j];
                    const auto [dot, mag] = head_dot(dattn, n * L + i, V, n * St + j, E, h, hd);
                    dP[j] = pd == 0.0 ? 0.0 : dot * keep;  // a dropped or masked weight passes nothing back
                    dPm[j] = mag * keep;
                    D += P[row * St + j] * dP[j];
                    Dm += P[row * St + j] * dPm[j];
                    for (std::size_t d = 0; d < hd; ++d) {
                        if (pd == 0.0) break;
                        dV.v[(n * St + j) * E + h * hd + d] += pd * g[d];
                        dV.m[(n * St + j) * E + h * hd + d] += pd * soft[row] * gm[d];
                    }
                }
                for (std::size_t j = 0; j < St; ++j) {
                    const double pj = P[row * St + j];
                    if (pj == 0.0) continue;
                    const double dS = pj * (dP[j] - D), dSm = pj * (dPm[j] + Dm) * soft[row];
                    for (std::size_t d = 0; d < hd; ++d) {
                        const std::size_t qi = (n * L + i) * E + h * hd + d, kj = (n * St + j) * E + h * hd + d;
                        dQ.v[qi] += scale * dS * K.v[kj];
                        dQ.m[qi] += scale * dSm * K.m[kj];
                        dK.v[kj] += scale * dS * Q.v[qi];
                        dK.m[kj] += scale * dSm * Q.m[qi];
                    }
                }
            }

    // The appended keys: bias_k and bias_v collect their rows' gradients over the batch; zero_attn's go nowhere.
    Pair dKin(N * S * E), dVin(N * S * E), dbias_k(E), dbias_v(E);  // (N, S, E), (N, S, E), (E), (E)
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t j = 0; j < St; ++j)
            for (std::size_t e = 0; e < E; ++e) {
                const std::size_t from = (n * St + j) * E + e;
                if (j < S) {
                    dKin.v[(n * S + j) * E + e] = dK.v[from], dKin.m[(n * S + j) * E + e] = dK.m[from];
                    dVin.v[(n * S + j) * E + e] = dV.v[from], dVin.m[(n * S + j) * E + e] = dV.m[from];
                } else if (j == S && config.add_bias_kv) {
                    dbias_k.v[e] += dK.v[from], dbias_k.m[e] += dK.m[from];
                    dbias_v.v[e] += dV.v[from], dbias_v.m[e] += dV.m[from];
                }
            }

    // 1. Through the input projections.
    const LinearGrads qg = linear_backward(dQ, xq, N * L, Wq, E, E);     // dx (N, L, E), dW (E, E), db (E)
    const LinearGrads kg = linear_backward(dKin, xk, N * S, Wk, kd, E);  // dx (N, S, kdim), dW (E, kdim), db (E)
    const LinearGrads vg = linear_backward(dVin, xv, N * S, Wv, vd, E);  // dx (N, S, vdim), dW (E, vdim), db (E)
    r.value.grad_query = to_layout(qg.dx.v, layout, L, E, qshape);
    r.terms.grad_query = to_layout(qg.dx.m, layout, L, E, qshape);
    const std::vector<std::size_t> kshape(key.shape().begin(), key.shape().end());
    const std::vector<std::size_t> vshape(value.shape().begin(), value.shape().end());
    r.value.grad_key = to_layout(kg.dx.v, layout, S, kd, kshape);
    r.terms.grad_key = to_layout(kg.dx.m, layout, S, kd, kshape);
    r.value.grad_value = to_layout(vg.dx.v, layout, S, vd, vshape);
    r.terms.grad_value = to_layout(vg.dx.m, layout, S, vd, vshape);

    // The parameters' gradients under their state_dict names and shapes.
    auto put = [&](const std::string& name, Flat v, Flat m) {
        const xattn::Shape& shape = module.find_parameter(name)->shape;
        r.value.grad_parameters[name] = shaped(v, shape);
        r.terms.grad_parameters[name] = shaped(m, shape);
    };
    auto joined = [](std::initializer_list<const Flat*> parts) {
        Flat all;
        for (const Flat* part : parts) all.insert(all.end(), part->begin(), part->end());
        return all;
    };
    if (module.packed_in_proj()) {
        put("in_proj_weight", joined({&qg.dW.v, &kg.dW.v, &vg.dW.v}), joined({&qg.dW.m, &kg.dW.m, &vg.dW.m}));
    } else {
        put("q_proj_weight", qg.dW.v, qg.dW.m);
        put("k_proj_weight", kg.dW.v, kg.dW.m);
        put("v_proj_weight", vg.dW.v, vg.dW.m);
    }
    if (config.bias) {
        put("in_proj_bias", joined({&qg.db.v, &kg.db.v, &vg.db.v}), joined({&qg.db.m, &kg.db.m, &vg.db.m}));
        put("out_proj.bias", out_grads.db.v, out_grads.db.m);
    }
    put("out_proj.weight", out_grads.dW.v, out_grads.dW.m);
    if (config.add_bias_kv) {
        put("bias_k", dbias_k.v, dbias_k.m);
        put("bias_v", dbias_v.v, dbias_v.m);
    }
    return r;
}

}  // namespace xattn
