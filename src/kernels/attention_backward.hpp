// The fused attention backward on the forward's micro-kernels, float32 sums, per problem b:
//   (Dao, "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", 2023,
//    https://arxiv.org/abs/2307.08691, Algorithm 2: key tiles outside, query groups inside.)
//
//   D_i = Σ_c dO_ic O_ic                                   once per problem, (L)
//   for each key tile K_j, V_j (Bc keys):                  dK_j, dV_j accumulate in (Bc, E) / (Bc, Ev) scratch
//     for each group of GW queries that sees any of its keys:
//       Sᵀ = K_j Qᵀ, scaled and masked (the forward's own scores())      (Bc, GW): keys in rows, queries in lanes
//       P  = exp(S - lse_i)     (lse from the forward: no max, no sum)   0 where a row sees nothing
//       Pd = P · dropout multiplier (the forward's seeded mask)
//       dV_j += Pdᵀ dO_group                                             (Bc, GW) · (GW, Ev)
//       dPᵀ  = V_j dO_groupᵀ, times the dropout multiplier                (Bc, Ev) · (Ev, GW)
//       dS   = scale · P ⊙ (dP − D_i)
//       dK_j += dSᵀ Q_group                                              (Bc, GW) · (GW, E)
//       dQ_group += dS K_j, in an (L, E) accumulator                      (GW, Bc) · (Bc, E)
//     dK, dV rows of the tile += dK_j, dV_j (query heads of a GQA group add to the same rows)
// Tiles no query of a group can see (the causal rule, the window, key lengths) are skipped, as in the forward. Every product is the
// micro-kernel of micro.hpp; operands whose rows are not whole vectors (E or Ev not a multiple of the
// width) are copied into padded rows first, so no load reads past an array.
//
// Scratch: O(tile) for the tiles and packed panels, plus the (L, E) dQ accumulator and D (L) of one
// problem: a (1, 16384, 64) backward needs about 4.3 MiB of it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention.hpp"

namespace xattn::kernels {
namespace {

template <class Kernel>
struct AttentionBackward {
    using O = typename Kernel::Ops;
    using V = typename O::V;
    using Head = typename Kernel::Head;
    using FwdScratch = typename Kernel::Scratch;
    static constexpr std::size_t W = Kernel::W, GW = Kernel::GW, Bc = Kernel::Bc;
    static constexpr std::size_t KeyRows = Kernel::KeyRowsN, QueryVecs = Kernel::QueryVecsN;
    static constexpr std::size_t PvRows = Kernel::PvRowsN, PvVecs = Kernel::PvVecsN;
    static constexpr float kNegInf = Kernel::kNegInf;

    struct Scratch {
        FwdScratch fwd;     // st (Bc, GW) P, mask (Bc, GW), drop (Bc, GW): what scores() and fill_dropout_tile() use
        float* qp;          // (E, GW)   Qᵀ panel of the group
        float* dop;         // (Ev, GW)  dOᵀ panel of the group
        float* qrows;       // (GW, Ep)  the group's Q rows, padded to whole vectors
        float* dorows;      // (GW, Evp) the group's dO rows, padded
        float* pd;          // (Bc, GW)  P after dropout
        float* ds;          // (Bc, GW)  dPᵀ, then dSᵀ
        float* capd;        // (Bc, GW)  with a soft-cap: d capped / d scaled of the tile's scores
        float* ktile;       // (Bc, Ep)  the key tile's rows, padded (when E is not whole vectors)
        float* dk;          // (Bc, Ep)  dK of the tile
        float* dv;          // (Bc, Evp) dV of the tile
        float* dq;          // (L, Ep)   dQ of the problem
        float* delta;       // (L)       D_i = Σ dO_i ⊙ O_i
        float* lse;         // (GW)      the group's log-sum-exp per lane (+inf past the group)
        float* dd;          // (GW)      the group's D per lane

        static std::uint64_t layout(const AttentionProblem& p, unsigned char* base, Scratch* s) {
            Carver c(base);
            const std::uint64_t ep = round_up(p.in.E, W), evp = round_up(p.in.Ev, W);
            const std::uint64_t keys = min_size(Bc, round_up(p.in.S, Kernel::TileGrainN));
            Scratch x{};
            x.fwd.st = c.take<float>(keys * GW);
            x.fwd.mask = c.take<float>(keys * GW);
            x.fwd.drop = c.take<float>(keys * GW);
            x.qp = c.take<float>(p.in.E * GW);
            x.dop = c.take<float>(p.in.Ev * GW);
            x.qrows = c.take<float>(GW * ep);
            x.dorows = c.take<float>(GW * evp);
            x.pd = c.take<float>(keys * GW);
            x.ds = c.take<float>(keys * GW);
            x.capd = c.take<float>(p.rules.softcap > 0.0f ? keys * GW : 0);
            x.ktile = c.take<float>(p.in.E % W ? keys * ep : 0);
            x.dk = c.take<float>(keys * ep);
            x.dv = c.take<float>(keys * evp);
            x.dq = c.take<float>(std::uint64_t{p.in.L} * ep);
            x.delta = c.take<float>(p.in.L);
            x.lse = c.take<float>(GW);
            x.dd = c.take<float>(GW);
            if (s) *s = x;
            return c.bytes();
        }
    };

    // Tasks: (key/value problem, chunk of key tiles). The query heads that share a problem's dK and dV run one
    // after another in head order within a task, so those sums are added in the same order whatever the thread
    // count. With fewer key/value problems than the most threads a build runs (kSplitBelow), the keys are cut into
    // chunks, so that one long sequence spreads over every thread: each chunk writes its own dK, dV rows and a
    // partial dQ of every query, and the partials are added in chunk order. Whether and how a call is cut depends
    // on its shape alone, never on the thread count.
    static constexpr std::size_t kSplitBelow = 4, kChunkMin = 512, kMaxChunks = 4;
    static std::size_t kv_problems(const AttentionProblem& p) { return p.in.batch / p.in.q_heads * p.in.kv_heads; }
    static std::size_t chunk_keys(const AttentionProblem& p) {
        const std::size_t bc = Kernel::tile_size(p.in.S);
        std::size_t n = kv_problems(p) >= kSplitBelow ? 1 : (p.in.S + kChunkMin - 1) / kChunkMin;
        n = n < 1 ? 1 : n > kMaxChunks ? kMaxChunks : n;
        return round_up((p.in.S + n - 1) / n, bc);
    }
    static std::size_t chunks(const AttentionProblem& p) {
        const std::size_t ck = chunk_keys(p);
        return p.in.S == 0 || ck == 0 ? 1 : (p.in.S + ck - 1) / ck;
    }
    // The call's work, about FLOPs: per task (key/value problem × chunk), five L × keys × (E + Ev) products per
    // query head of the group.
    static double work(const AttentionProblem& p) {
        const double keys = static_cast<double>(min_size(chunk_keys(p), p.in.S));
        return 5.0 * static_cast<double>(kv_problems(p) * chunks(p)) * static_cast<double>(p.in.q_heads / p.in.kv_heads) *
               static_cast<double>(p.in.L) * keys * static_cast<double>(p.in.E + p.in.Ev);
    }
    static unsigned workers(const AttentionProblem& p) {
        return useful_workers(p.threads, kv_problems(p) * chunks(p), work(p));
    }
    static std::uint64_t stride(const AttentionProblem& p) { return worker_stride(Scratch::layout(p, nullptr, nullptr)); }
    // The chunks' partial dQ: (batch, chunks, L, E) floats when the keys are cut, else nothing.
    static std::uint64_t partials_floats(const AttentionProblem& p) {
        return chunks(p) == 1 ? 0 : std::uint64_t{p.in.batch} * chunks(p) * p.in.L * p.in.E;
    }
    static std::uint64_t workspace(const AttentionProblem& p) {
        return worker_stride(partials_floats(p) * sizeof(float)) + workers(p) * stride(p) + Carver::kSlack;
    }

    // rows (n, cols) -> dst (n, ld) with zeros past cols; dst rows n … GW-1 (when n < rows_total) zero too.
    static void pad_rows(const float* src, std::size_t n, std::size_t cols, std::size_t total, float* dst, std::size_t ld) {
        for (std::size_t r = 0; r < total; ++r)
            for (std::size_t c = 0; c < ld; ++c) dst[r * ld + c] = r < n && c < cols ? src[r * cols + c] : 0.0f;
    }

    // dst rows (nrows, ld) += A (nrows, K) · B (K, ld): A element (r, k) at a[r·a_row + k·a_k], B rows ldb apart.
    static void product(float* dst, std::size_t ld, std::size_t nrows, std::size_t K, const float* a, std::size_t a_row,
                        std::size_t a_k, const float* b, std::size_t ldb) {
        const std::size_t nvec = ld / W;
        for (std::size_t r0 = 0; r0 < nrows; r0 += PvRows)
            for (std::size_t c0 = 0; c0 < nvec; c0 += PvVecs)
                with_count<PvRows>(nrows - r0, [&](auto nr_) {
                    with_count<PvVecs>(nvec - c0, [&](auto nv_) {
                        constexpr std::size_t NR = decltype(nr_)::value, NV = decltype(nv_)::value;
                        Block<O, NR, NV> acc;
                        float* out = dst + r0 * ld + c0 * W;
                        acc.load(out, ld);
                        accumulate(acc, K, a + r0 * a_row, a_row, a_k, b + c0 * W, ldb);
                        acc.store(out, ld);
                    });
                });
    }

    // dPᵀ (kg, GW) = V rows (kg, Ev) · dOᵀ panel (Ev, GW): the score micro-kernel's shape.
    static void value_scores(const float* v, std::size_t Ev, std::size_t kg, std::size_t nqv, const float* panel,
                             float* out) {
        for (std::size_t j0 = 0; j0 < kg; j0 += KeyRows)
            with_count<KeyRows>(kg - j0, [&](auto nk_) {
                with_count<QueryVecs>(nqv, [&](auto nq_) {
                    constexpr std::size_t NK = decltype(nk_)::value, NQ = decltype(nq_)::value;
                    Block<O, NK, NQ> acc;
                    acc.fill(O::splat(0.0f));
                    accumulate(acc, Ev, v + j0 * Ev, Ev, 1, panel, GW);
                    acc.store(out + j0 * GW, GW);
                });
            });
    }

    static void run(const AttentionProblem& p, void* workspace) {
        const std::size_t G = p.in.q_heads / p.in.kv_heads, nc = chunks(p), ck = chunk_keys(p);
        const std::size_t step = static_cast<std::size_t>(stride(p));
        Carver c(workspace);
        float* partials = c.take<float>(partials_floats(p));  // (batch, nc, L, E)
        unsigned char* base = c.take<unsigned char>(0);
        parallel_for(kv_problems(p) * nc, workers(p), work(p), [&](std::size_t task, unsigned worker) {
            Scratch w;
            Scratch::layout(p, base + worker * step, &w);
            const std::size_t kv = task / nc, chunk = task % nc;
            const std::size_t k_begin = chunk * ck, k_end = min_size(p.in.S, k_begin + ck);
            // Query problems of kv: b = outer · Hq + kv head · G + g (the inverse of SdpaPlan::kv_index).
            const std::size_t outer = kv / p.in.kv_heads, kv_head = kv % p.in.kv_heads;
            for (std::size_t g = 0; g < G; ++g) {
                const std::size_t b = outer * p.in.q_heads + kv_head * G + g;
                if (p.skip && p.skip[b]) continue;
                const Head h = Kernel::head(p, w.fwd, b);
                float* dQ = nc == 1 ? p.out.grad_query + b * p.in.L * p.in.E : partials + (b * nc + chunk) * p.in.L * p.in.E;
                problem(h, w, p.in.grad_output + b * p.in.L * p.in.Ev, p.out.lse + b * p.in.L, dQ, p.out.grad_key + kv * p.in.S * p.in.E,
                        p.out.grad_value + kv * p.in.S * p.in.Ev, k_begin, k_end);
            }
        });
        if (nc == 1) return;
        // dQ = the chunks' partials, added in chunk order.
        parallel_for(p.in.batch, workers(p), static_cast<double>(p.in.batch * nc * p.in.L * p.in.E), [&](std::size_t b, unsigned) {
            if (p.skip && p.skip[b]) return;
            float* dQ = p.out.grad_query + b * p.in.L * p.in.E;
            const float* part = partials + b * nc * p.in.L * p.in.E;
            for (std::size_t x = 0; x < p.in.L * p.in.E; ++x) dQ[x] = part[x];
            for (std::size_t chunk = 1; chunk < nc; ++chunk)
                for (std::size_t x = 0; x < p.in.L * p.in.E; ++x) dQ[x] += part[chunk * p.in.L * p.in.E + x];
        });
    }

    // Keys [k_begin, k_end) (whole tiles) of problem h: dK, dV rows added to, dQ (L, E) written.
    static void problem(const Head& h, const Scratch& w, const float* dO, const float* lse, float* dQ, float* dK,
                        float* dV, std::size_t k_begin, std::size_t k_end) {
        const AttentionProblem& p = h.p;
        const std::size_t L = p.in.L, S = p.in.S, E = p.in.E, Ev = p.in.Ev;
        const std::size_t ep = round_up(E, W), evp = h.evp;
        for (std::size_t i = 0; i < L; ++i) {
            double d = 0.0;  // a row's D is one float; summing it in float64 costs nothing next to the tiles
            for (std::size_t c = 0; c < Ev; ++c) d += static_cast<double>(dO[i * Ev + c]) * h.out[i * Ev + c];
            w.delta[i] = static_cast<float>(d);
        }
        for (std::size_t x = 0; x < L * ep; ++x) w.dq[x] = 0.0f;

        const std::size_t bc = Kernel::tile_size(S);
        for (std::size_t k0 = k_begin; k0 < k_end; k0 += bc) {
            const std::size_t kn = min_size(bc, k_end - k0);
            const float* kt = h.k + k0 * E;
            std::size_t ldk = E;
            if (E % W) {
                pad_rows(h.k + k0 * E, kn, E, kn, w.ktile, ep);
                kt = w.ktile, ldk = ep;
            }
            for (std::size_t x = 0; x < kn * ep; ++x) w.dk[x] = 0.0f;
            for (std::size_t x = 0; x < kn * evp; ++x) w.dv[x] = 0.0f;
            // The first group with a query that may see key k0 (query i sees keys j <= i + high_shift); groups from
            // the first whose rows all start past the tile (j >= i + low_shift) see none of it.
            std::size_t first = 0;
            if (h.keys.high) {
                const std::int64_t i = static_cast<std::int64_t>(k0) - h.keys.high_shift;
                first = i <= 0 ? 0 : static_cast<std::size_t>(i) / GW * GW;
            }
            for (std::size_t i0 = first; i0 < L && h.keys.first(i0) < k0 + kn; i0 += GW) {
                const std::size_t gn = min_size(GW, L - i0);
                const typename Kernel::Span seen = Kernel::visible_keys(h, i0, gn, k0, kn);
                if (seen.count == 0) continue;
                group(h, w, dO, lse, i0, gn, k0, seen, kt, ldk);
            }
            // The tile's dK, dV rows, added: the query heads of a GQA group share them.
            for (std::size_t j = 0; j < kn; ++j) {
                for (std::size_t c = 0; c < E; ++c) dK[(k0 + j) * E + c] += w.dk[j * ep + c];
                for (std::size_t c = 0; c < Ev; ++c) dV[(k0 + j) * Ev + c] += w.dv[j * evp + c];
            }
        }
        for (std::size_t i = 0; i < L; ++i)
            for (std::size_t c = 0; c < E; ++c) dQ[i * E + c] = w.dq[i * ep + c];
    }

    // The group of rows from i0 against the keys `seen` of the tile at k0 (kt: the tile's rows, ldk apart).
    static void group(const Head& h, const Scratch& w, const float* dO, const float* lse, std::size_t i0,
                      std::size_t gn, std::size_t tile_k0, typename Kernel::Span seen, const float* tile_kt,
                      std::size_t ldk) {
        const AttentionProblem& p = h.p;
        const std::size_t E = p.in.E, Ev = p.in.Ev, ep = round_up(E, W), evp = h.evp;
        const std::size_t k0 = tile_k0 + seen.skip, kg = seen.count;  // the keys [k0, k0 + kg)
        const float* kt = tile_kt + seen.skip * ldk;
        float* dk = w.dk + seen.skip * ep;   // their rows of the tile's dK and dV
        float* dv = w.dv + seen.skip * evp;
        float* const capd = p.rules.softcap > 0.0f ? w.capd : nullptr;
        const std::size_t nqv = (gn + W - 1) / W;
        // The group's operands: Qᵀ and dOᵀ panels, Q and dO rows padded to whole vectors, lse and D per lane.
        Kernel::pack_queries(h, i0, gn, w.qp);
        for (std::size_t lane = 0; lane < GW; ++lane)
            for (std::size_t c = 0; c < Ev; ++c) w.dop[c * GW + lane] = lane < gn ? dO[(i0 + lane) * Ev + c] : 0.0f;
        pad_rows(h.q + i0 * E, gn, E, gn, w.qrows, ep);
        pad_rows(dO + i0 * Ev, gn, Ev, gn, w.dorows, evp);
        for (std::size_t lane = 0; lane < GW; ++lane) {
            // Past the group, and for rows that see no key, P must be 0: lse +inf does both.
            const float x = lane < gn ? lse[i0 + lane] : -kNegInf;
            w.lse[lane] = x == kNegInf ? -kNegInf : x;
            w.dd[lane] = lane < gn ? w.delta[i0 + lane] : 0.0f;
        }

        // Sᵀ (kg, GW), scaled and masked, then P = exp(S - lse) in st and Pd in pd.
        V unused[QueryVecs];
        for (auto& u : unused) u = O::splat(kNegInf);
        Kernel::scores(h, w.qp, h.k + k0 * p.in.E, i0, gn, k0, kg, unused, ScoresKind::none, capd);
        if (p.rules.dropout) Kernel::fill_dropout_tile(h, i0, gn, k0, kg);
        const V zero = O::splat(0.0f);
        for (std::size_t j = 0; j < kg; ++j)
            for (std::size_t v = 0; v < nqv; ++v) {
                float* at = w.fwd.st + j * GW + v * W;
                // s ≤ lse up to rounding; s - lse = -inf - inf where the key or the row is out: P = 0.
                const V x = O::load(at) - O::load(w.lse + v * W);
                const V e = exp_nonpositive<O>(O::select(x < zero, x, zero));
                const V pv = O::select(x == x, e, zero);
                O::store(at, pv);
                O::store(w.pd + j * GW + v * W, p.rules.dropout ? pv * O::load(w.fwd.drop + j * GW + v * W) : pv);
            }
        // dV tile (kg, evp) += Pd (kg, gn) · dO rows (gn, evp).
        product(dv, evp, kg, gn, w.pd, GW, 1, w.dorows, evp);
        // dPᵀ (kg, GW) = V rows (kg, Ev) · dOᵀ (Ev, GW); then dS = scale · P ⊙ (dP · multiplier − D), and through
        // a soft-cap times its slope 1 − tanh².
        value_scores(h.v + k0 * Ev, Ev, kg, nqv, w.dop, w.ds);
        const V scale = O::splat(p.rules.scale);
        for (std::size_t j = 0; j < kg; ++j)
            for (std::size_t v = 0; v < nqv; ++v) {
                float* at = w.ds + j * GW + v * W;
                V dp = O::load(at);
                if (p.rules.dropout) dp = dp * O::load(w.fwd.drop + j * GW + v * W);
                V ds = O::load(w.fwd.st + j * GW + v * W) * (dp - O::load(w.dd + v * W)) * scale;
                if (capd) ds = ds * O::load(capd + j * GW + v * W);
                O::store(at, ds);
            }
        // dK tile (kg, ep) += dS (kg, gn) · Q rows (gn, ep);  dQ rows (gn, ep) += dSᵀ (gn, kg) · K tile (kg, ep).
        product(dk, ep, kg, gn, w.ds, GW, 1, w.qrows, ep);
        product(w.dq + i0 * ep, ep, gn, kg, w.ds, 1, GW, kt, ldk);
    }
};

}  // namespace
}  // namespace xattn::kernels
