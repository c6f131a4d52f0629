// Tiled attention on one ops type (simd_scalar.hpp / simd_xsimd.hpp): the fast path behind run_sdpa.
// The algorithm (query groups and key tiles, the streaming and materialising paths, the semantics both
// keep, the scratch) is described once, in src/kernels/README.md; the comments below say how.
//
// Shapes per problem b (legend in xattn/dims.hpp):
//   Q (L, E)   K (S, E)   V (S, Ev)   O (L, Ev)   weights (L, S) when asked for
// ref: Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", 2022,
//      https://arxiv.org/abs/2205.14135 (Algorithm 1: the streaming path's online softmax)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/carver.hpp"
#include "kernels/dropout_hash.hpp"
#include "kernels/exp2.hpp"
#include "kernels/half.hpp"
#include "kernels/kahan.hpp"
#include "kernels/vector_loops.hpp"
#include "kernels/kernels.hpp"
#include "kernels/kv_layout.hpp"
#include "kernels/micro.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd_scalar.hpp"
#include "kernels/tanh.hpp"

namespace xattn::kernels {
namespace {

constexpr std::size_t min_size(std::size_t a, std::size_t b) { return a < b ? a : b; }
constexpr std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// The keys each row of one problem may see under the rules (AttentionRules, kernels.hpp): [first(i), end(i)),
// both nondecreasing in i, within the problem's len keys.
struct RowKeys {
    std::size_t len = 0;         // its batch element's key length, or S
    std::int64_t offset = 0;     // row i sits at position p = i + offset among the keys
    bool low = false;            // bounded below: j >= i + low_shift (the window's left side)
    bool high = false;           // bounded above: j <= i + high_shift (the causal rule, the window's right side)
    std::int64_t low_shift = 0, high_shift = 0;
    std::size_t clamp(std::int64_t x) const { return x <= 0 ? 0 : min_size(static_cast<std::size_t>(x), len); }
    std::size_t first(std::size_t i) const { return low ? clamp(static_cast<std::int64_t>(i) + low_shift) : 0; }
    std::size_t end(std::size_t i) const {
        const std::size_t e = high ? clamp(static_cast<std::int64_t>(i) + high_shift + 1) : len;
        const std::size_t f = first(i);
        return e < f ? f : e;
    }
};

// The keys of the rules' problem b, whose rows number `rows` (L, or stack_rows of stacked rows).
inline RowKeys row_keys(const AttentionProblem& p, std::size_t b, std::size_t rows) {
    const AttentionRules& r = p.rules;
    RowKeys k;
    k.len = r.key_lengths ? static_cast<std::size_t>(r.key_lengths[b / r.heads]) : p.in.S;
    k.offset = r.bottom_right ? static_cast<std::int64_t>(k.len) - static_cast<std::int64_t>(rows) : 0;
    k.low = r.window_left >= 0;
    k.low_shift = k.offset - r.window_left;
    k.high = r.causal || r.window_right >= 0;
    k.high_shift = r.causal ? k.offset : k.offset + r.window_right;
    return k;
}

// Keys every row of a problem sees at most, for the work estimate: the window's width, or all of S.
inline double keys_per_row(const AttentionProblem& p) {
    const AttentionRules& r = p.rules;
    const double S = static_cast<double>(p.in.S);
    if (r.window_left < 0 || (r.window_right < 0 && !r.causal)) return S;
    const double width = static_cast<double>(r.window_left) + (r.causal ? 0.0 : static_cast<double>(r.window_right)) + 1.0;
    return width < S ? width : S;
}

// Offset of mask element (problem b, row r, key 0): the walk MaskLayout describes, from the rules' problem and row
// of stacked rows (kernels.hpp).
inline std::size_t mask_row_offset(const AttentionRules& rules, std::size_t b, std::size_t r) {
    const MaskLayout& m = rules.mask;
    const std::size_t rows = rules.stack_rows ? rules.stack_rows : 1;
    std::size_t problem = b * rules.stack + r / rows, offset = r % rows * m.query_stride;
    for (std::size_t d = m.outer_rank; d-- > 0;) {
        offset += problem % m.outer_extents[d] * m.outer_strides[d];
        problem /= m.outer_extents[d];
    }
    return offset;
}

//   KeyRows × QueryVecs   score micro-kernel: KeyRows keys × QueryVecs vectors of queries
//   PvRows × PvVecs       output micro-kernel: PvRows queries × PvVecs vectors of Ev
//   KeyTile               most keys per tile (Bc), a multiple of KeyRows
//   TileGrain             tiles are evened out to multiples of it (tile_size), a multiple of KeyRows: kernels
//                         of one instruction set with different blocks share it, so that their tiles, and so
//                         their results' bits, are the same
template <class O, std::size_t KeyRows, std::size_t QueryVecs, std::size_t PvRows, std::size_t PvVecs,
          std::size_t KeyTile, std::size_t TileGrain = KeyRows>
struct AttentionKernel {
    static_assert(KeyTile % TileGrain == 0 && TileGrain % KeyRows == 0, "tiles hold whole score micro-kernels");
    using Ops = O;
    using V = typename O::V;
    static constexpr std::size_t KeyRowsN = KeyRows, QueryVecsN = QueryVecs, PvRowsN = PvRows, PvVecsN = PvVecs;
    static constexpr std::size_t TileGrainN = TileGrain;
    static constexpr std::size_t W = O::width;
    static constexpr std::size_t GW = QueryVecs * W;                 // queries per group
    static constexpr std::size_t Bc = KeyTile;                       // keys per tile
    static constexpr std::size_t Bq = GW >= 64 ? GW : 64 / GW * GW;  // queries sharing each K/V tile
    static constexpr float kNegInf = -std::numeric_limits<float>::infinity();

    struct Scratch {
        float* qp;        // (Bq / GW) Qᵀ panels (E, GW)
        float* st;        // (Bc, GW) scores, then probabilities
        float* mask;      // (Bc, GW) mask tile: additive values, or 0 / -inf for a boolean mask
        float* drop;      // (Bc, GW) dropout factors: 1/(1-p) kept, 0 dropped
        float* kt;        // (Bc, E) key tile widened from float16 storage
        float* vt;        // (Bc, Evp) value tile padded to whole vectors, when Ev is not (or from float16)
        float* acc;       // (Bq, Evp) unnormalised output rows
        float* accc;      // (Bq, Evp) their compensation: what rounding took from acc (Kahan)
        float* m;         // (Bq) running max per query
        float* l;         // (Bq) running sum per query
        float* lc;        // (Bq) its compensation
        float* alpha;     // (Bq) rescale of this tile: exp(old max - new max)
        // (Bq and Bc shrink to L and S rounded up to whole groups and micro-kernels when those are smaller.)

        static std::size_t layout(const AttentionProblem& p, unsigned char* base, Scratch* s) {
            Carver c(base);
            const std::size_t evp = round_up(p.in.Ev, W);
            const std::size_t rows = min_size(Bq, round_up(p.in.L, GW));  // a block never holds more queries
            const std::size_t keys = min_size(Bc, round_up(p.in.S, TileGrain));
            Scratch x;
            x.qp = c.take<float>(p.in.E * rows);
            x.st = c.take<float>(keys * GW);
            x.mask = c.take<float>(keys * GW);
            x.drop = c.take<float>(keys * GW);
            x.kt = c.take<float>(p.in.kv_float16 || p.in.kv_blocked ? keys * p.in.E : 0);
            x.vt = c.take<float>(p.in.Ev % W || p.in.kv_float16 || p.in.kv_blocked ? keys * evp : 0);
            x.acc = c.take<float>(rows * evp);
            x.accc = c.take<float>(rows * evp);
            x.m = c.take<float>(rows);
            x.l = c.take<float>(rows);
            x.lc = c.take<float>(rows);
            x.alpha = c.take<float>(rows);
            if (s) *s = x;
            return c.bytes();
        }
    };

    // One problem b, with the per-b pointers resolved.
    struct Head {
        const AttentionProblem& p;
        const Scratch& w;
        std::size_t b;
        const float* q;   // (L, E)
        const float* k;   // (S, E), or null when the keys are float16 (k16)
        const float* v;   // (S, Ev), or null when the values are float16 (v16)
        const std::uint16_t* k16;
        const std::uint16_t* v16;
        float* out;       // (L, Ev)
        float* weights;   // (L, S) or null
        std::size_t mask_base;
        std::size_t evp;
        RowKeys keys;     // which keys each row sees
        float slope;      // ALiBi's slope of this problem's head (0 without)
        std::size_t ring_start, ring;  // a KV cache's ring: key j in slot (ring_start + j) % ring (ring 0: slot j)
        std::size_t slot(std::size_t j) const { return ring ? (ring_start + j) % ring : j; }
    };
    // A run of keys within a tile: [k0 + skip, k0 + skip + count).
    struct Span {
        std::size_t skip, count;
    };

    // The run is cut into tasks, one per (problem b, block of queries): Bq queries streaming, GW queries
    // materialising. Each block's rows come out of the same code whichever worker runs it, so the thread
    // count never changes a result; each worker has its own Scratch, `stride` bytes apart.
    static std::size_t rows_per_task(const AttentionProblem& p) { return p.out.weights ? GW : Bq; }
    // The call's FLOPs (Q·Kᵀ and P·V of every problem).
    static double work(const AttentionProblem& p) {
        return 2.0 * static_cast<double>(p.in.batch) * static_cast<double>(p.in.L) * keys_per_row(p) *
               static_cast<double>(p.in.E + p.in.Ev);
    }
    static unsigned workers(const AttentionProblem& p, std::size_t rows) {
        return useful_workers(p.threads, p.in.batch * ((p.in.L + rows - 1) / rows), work(p));
    }
    static std::size_t stride(const AttentionProblem& p) {
        return static_cast<std::size_t>(worker_stride(Scratch::layout(p, nullptr, nullptr)));
    }
    // Planners size the workspace without the weights pointer: room for the materialising path's workers,
    // which are never fewer than the streaming path's (more tasks, the same work).
    static std::size_t workspace(const AttentionProblem& p) { return workers(p, GW) * stride(p); }

    static Head head(const AttentionProblem& p, const Scratch& w, std::size_t b) {
        // SdpaPlan::kv_index, spelled out: no inline function of a shared header is compiled here.
        const std::size_t kv = b / p.in.q_heads * p.in.kv_heads + b % p.in.q_heads / (p.in.q_heads / p.in.kv_heads);
        // Key/value problems are key_stride / value_stride elements apart (a KV cache holds capacity rows).
        const std::size_t ks = p.in.key_stride ? p.in.key_stride : p.in.S * p.in.E, vs = p.in.value_stride ? p.in.value_stride : p.in.S * p.in.Ev;
        return Head{p, w, b, p.in.query + b * p.in.L * p.in.E, p.in.key ? p.in.key + kv * ks : nullptr, p.in.value ? p.in.value + kv * vs : nullptr,
                    p.in.key16 ? p.in.key16 + kv * ks : nullptr, p.in.value16 ? p.in.value16 + kv * vs : nullptr,
                    p.out.output + b * p.in.L * p.in.Ev, p.out.weights ? p.out.weights + b * p.in.L * p.in.S : nullptr,
                    p.rules.mask.type == MaskType::none ? 0 : mask_row_offset(p.rules, b, 0), round_up(p.in.Ev, W),
                    row_keys(p, b, p.in.L), p.rules.alibi_slopes ? p.rules.alibi_slopes[b % p.rules.heads] : 0.0f,
                    p.in.kv_ring ? p.in.kv_ring[2 * (b / p.rules.heads)] : 0, p.in.kv_ring ? p.in.kv_capacity : 0};
    }

    static void run(const AttentionProblem& p, void* workspace) {
        const std::size_t rows = rows_per_task(p), blocks = (p.in.L + rows - 1) / rows, step = stride(p);
        unsigned char* base = static_cast<unsigned char*>(workspace);
        parallel_for(p.in.batch * blocks, workers(p, rows), work(p), [&](std::size_t task, unsigned worker) {
            Scratch w;
            Scratch::layout(p, base + worker * step, &w);
            const Head h = head(p, w, task / blocks);
            const std::size_t i0 = task % blocks * rows;
            if (h.weights) materialise_group(h, i0);
            else stream_block(h, i0);
        });
        if (!p.out.scores) return;
        // The scores asked for: every (row, key) of every problem at their stage, in tasks of GW rows.
        const std::size_t groups = (p.in.L + GW - 1) / GW;
        parallel_for(p.in.batch * groups, workers(p, GW), work(p) / 2, [&](std::size_t task, unsigned worker) {
            Scratch w;
            Scratch::layout(p, base + worker * step, &w);
            scores_group(head(p, w, task / groups), task % groups * GW);
        });
    }

    static bool all_finite(const float* x, std::size_t n) { return kernels::all_finite<O>(x, n); }

    // The value tile about to be used, scanned just before its product (it is in cache then), not in a pass of
    // its own over V: `finite` false (inf or NaN) sends it to the select-guarded product; `below` false (a value
    // so large that the output sums could overflow: |v| · keep_scale · S ≥ 2^120) makes their compensation
    // take the guarded form from then on. Ordinary data is finite and below.
    static Scan scan_value_tile(const Head& h, const float* vt, std::size_t ld, std::size_t kn) {
        const float limit = 0x1p120f / (h.p.rules.keep_scale * static_cast<float>(h.p.in.S > 0 ? h.p.in.S : 1));
        return scan_values<O>(vt, kn * ld, limit);
    }

    static void widen(const std::uint16_t* src, std::size_t n, float* dst) { widen_halves<O>(src, n, dst); }

    // A KV cache's key rows [k0, k0 + kn) into kt (kn, E), from its key blocks (kv_layout.hpp: element c of
    // the key in slot s at (s / 16 · E + c) · 16 + s % 16), widened from float16.
    // float32 keys go 4 × 4 at a time where the ops can transpose (4 slots from a multiple of 4, which one block
    // holds, × 4 elements), the rest one at a time.
    static void gather_key_rows(const Head& h, std::size_t k0, std::size_t kn) {
        const std::size_t E = h.p.in.E;
        const KvLayout lay{E, h.p.in.Ev};
        const auto at = [&](std::size_t j) { return lay.key_offset(h.slot(k0 + j), 0); };  // element 0 of key k0 + j
        const auto one_row = [&](std::size_t jj) {
            const std::size_t a = at(jj);
            float* row = h.w.kt + jj * E;
            if (h.k16)
                for (std::size_t c = 0; c < E; ++c) row[c] = half_to_float(h.k16[a + c * kKeyBlock]);
            else
                for (std::size_t c = 0; c < E; ++c) row[c] = h.k[a + c * kKeyBlock];
        };
        // Four keys in slots s … s + 3 of one block, s a multiple of 4 (and not past a ring's end).
        const auto four_in_a_block = [&](std::size_t j) {
            const std::size_t s = h.slot(k0 + j);
            return s % 4 == 0 && j + 4 <= kn && (!h.ring || s + 4 <= h.ring);
        };
        std::size_t j = 0;
        while (j < kn) {
            if constexpr (O::has_transpose4) {
                if (!h.k16 && four_in_a_block(j)) {
                    const float* run = h.k + at(j);  // element c of keys k0 + j … + 3 at run + c · 16
                    float* rows = h.w.kt + j * E;
                    std::size_t c = 0;
                    for (; c + 4 <= E; c += 4) {
                        const float* const from[4] = {run + c * kKeyBlock, run + (c + 1) * kKeyBlock,
                                                      run + (c + 2) * kKeyBlock, run + (c + 3) * kKeyBlock};
                        O::transpose4(from, rows + c, E);
                    }
                    for (; c < E; ++c)
                        for (std::size_t l = 0; l < 4; ++l) rows[l * E + c] = run[c * kKeyBlock + l];
                    j += 4;
                    continue;
                }
            }
            one_row(j++);
        }
    }
    // A KV cache's value rows [k0, k0 + kn) into vt (kn, evp), from its value tiles (kv_layout.hpp): each row a
    // run of each column block, widened from float16, zeros from Ev to evp.
    static void gather_value_rows(const Head& h, std::size_t k0, std::size_t kn) {
        const KvLayout lay{h.p.in.E, h.p.in.Ev};
        const std::size_t Ev = h.p.in.Ev;
        for (std::size_t j = 0; j < kn; ++j) {
            float* row = h.w.vt + j * h.evp;
            for (std::size_t cb = 0; cb * kValueCols < Ev; ++cb) {
                const std::size_t from = cb * kValueCols, n = min_size(lay.value_width(cb), Ev - from);
                const std::size_t at = lay.value_offset(h.slot(k0 + j), from);  // the row's run in column block cb
                if (h.v16) widen(h.v16 + at, n, row + from);
                else for (std::size_t c = 0; c < n; ++c) row[from + c] = h.v[at + c];
            }
            for (std::size_t c = Ev; c < h.evp; ++c) row[c] = 0.0f;
        }
    }

    // The key rows [k0, k0 + kn), (kn, E): in place, or widened from float16 (or gathered from a cache's blocks)
    // into kt.
    static const float* key_tile(const Head& h, std::size_t k0, std::size_t kn) {
        if (h.p.in.kv_blocked) {
            gather_key_rows(h, k0, kn);
            return h.w.kt;
        }
        if (!h.k16) return h.k + k0 * h.p.in.E;
        widen(h.k16 + k0 * h.p.in.E, kn * h.p.in.E, h.w.kt);
        return h.w.kt;
    }

    // Key tiles over [0, kend): as even as whole micro-kernels allow, so no tile is a small remainder
    // that pays a whole tile's overhead (S = 197 in tiles of up to 96 gives 66, 66, 65 rather than 96, 96, 5).
    static std::size_t tile_size(std::size_t kend) {
        const std::size_t tiles = (kend + Bc - 1) / Bc;
        return tiles == 0 ? Bc : round_up((kend + tiles - 1) / tiles, TileGrain);
    }

    // Qᵀ panel (E, GW) of queries i0 … i0+gn-1; lanes past gn are 0.
    static void pack_queries(const Head& h, std::size_t i0, std::size_t gn, float* panel) {
        const std::size_t E = h.p.in.E;
        for (std::size_t lane = 0; lane < GW; ++lane) {
            const float* row = lane < gn ? h.q + (i0 + lane) * E : nullptr;
            for (std::size_t e = 0; e < E; ++e) panel[e * GW + lane] = row ? row[e] : 0.0f;
        }
    }

    // The keys of the tile [k0, k0 + kn) that at least one query of the group may see.
    static Span visible_keys(const Head& h, std::size_t i0, std::size_t gn, std::size_t k0, std::size_t kn) {
        const std::size_t from = h.keys.first(i0), to = h.keys.end(i0 + gn - 1);
        const std::size_t b = from > k0 ? from : k0, e = min_size(to, k0 + kn);
        return e <= b ? Span{0, 0} : Span{b - k0, e - b};
    }

    // The value rows [k0, k0 + kn) as whole vectors: in place, or copied into vt when Ev is not a
    // multiple of W (so the last vector never reads past V).
    static const float* value_tile(const Head& h, std::size_t k0, std::size_t kn, std::size_t* ld) {
        const std::size_t Ev = h.p.in.Ev;
        if (h.p.in.kv_blocked) {
            gather_value_rows(h, k0, kn);
            *ld = h.evp;
            return h.w.vt;
        }
        if (h.v16) {  // widened from float16 into vt, rows padded to whole vectors
            for (std::size_t j = 0; j < kn; ++j) {
                widen(h.v16 + (k0 + j) * Ev, Ev, h.w.vt + j * h.evp);
                for (std::size_t c = Ev; c < h.evp; ++c) h.w.vt[j * h.evp + c] = 0.0f;
            }
            *ld = h.evp;
            return h.w.vt;
        }
        if (Ev % W == 0) {
            *ld = Ev;
            return h.v + k0 * Ev;
        }
        for (std::size_t j = 0; j < kn; ++j)
            for (std::size_t c = 0; c < h.evp; ++c) h.w.vt[j * h.evp + c] = c < Ev ? h.v[(k0 + j) * Ev + c] : 0.0f;
        *ld = h.evp;
        return h.w.vt;
    }

    // Mask tile (kg, GW) for queries i0 … i0+gn-1 and keys k0 … k0+kg-1: the additive values, or
    // 0 / -inf for a boolean mask. Lanes past gn get 0.
    static void fill_mask_tile(const Head& h, std::size_t i0, std::size_t gn, std::size_t k0, std::size_t kg) {
        const AttentionProblem& p = h.p;
        float* t = h.w.mask;
        const bool boolean = p.rules.mask.type == MaskType::boolean;
        const std::size_t ks = p.rules.mask.key_stride;
        auto value = [&](std::size_t at) {
            return boolean ? (p.rules.mask.bools[at] ? 0.0f : kNegInf) : p.rules.mask.values[at];
        };
        if (p.rules.mask.query_stride == 0) {
            // One mask row for every query (e.g. key padding (B, 1, 1, S)): each key's value across the lanes.
            const std::size_t row = h.mask_base + k0 * ks;
            for (std::size_t j = 0; j < kg; ++j) {
                const V x = O::splat(value(row + j * ks));
                for (std::size_t v = 0; v < GW; v += W) O::store(t + j * GW + v, x);
            }
            return;
        }
        // A row per query: the tile is their transpose. Lanes past gn repeat query i0's row: finite or
        // -inf like any score there, and never read back.
        std::size_t rows[GW];
        for (std::size_t lane = 0; lane < GW; ++lane)
            rows[lane] = h.mask_base + (i0 + (lane < gn ? lane : 0)) * p.rules.mask.query_stride + k0 * ks;
        std::size_t j = 0;
        if constexpr (O::has_transpose4) {
            if (ks == 1 && GW % 4 == 0)
                for (; j + 4 <= kg; j += 4)
                    for (std::size_t lane = 0; lane < GW; lane += 4) {
                        if (boolean) {
                            const std::uint8_t* r[4];
                            for (std::size_t x = 0; x < 4; ++x) r[x] = p.rules.mask.bools + rows[lane + x] + j;
                            O::transpose4(r, t + j * GW + lane, GW);
                        } else {
                            const float* r[4];
                            for (std::size_t x = 0; x < 4; ++x) r[x] = p.rules.mask.values + rows[lane + x] + j;
                            O::transpose4(r, t + j * GW + lane, GW);
                        }
                    }
        }
        alignas(64) float line[GW];
        for (; j < kg; ++j) {
            if (boolean) {
                const float forbid_or_allow[2] = {kNegInf, 0.0f};  // a table, not a branch on random bits
                for (std::size_t lane = 0; lane < GW; ++lane)
                    line[lane] = forbid_or_allow[p.rules.mask.bools[rows[lane] + j * ks] != 0];
            } else {
                for (std::size_t lane = 0; lane < GW; ++lane) line[lane] = p.rules.mask.values[rows[lane] + j * ks];
            }
            for (std::size_t v = 0; v < GW; v += W) O::store(t + j * GW + v, O::load(line + v));
        }
    }

    static void fill_dropout_tile(const Head& h, std::size_t i0, std::size_t gn, std::size_t k0, std::size_t kg) {
        const AttentionProblem& p = h.p;
        for (std::size_t lane = 0; lane < GW; ++lane) {
            const std::uint64_t row = (static_cast<std::uint64_t>(h.b) * p.in.L + i0 + lane) * p.in.S + k0;
            for (std::size_t j = 0; j < kg; ++j)
                h.w.drop[j * GW + lane] =
                    lane < gn && dropout_keep(p.rules.seed, p.rules.dropout_threshold, row + j) ? p.rules.keep_scale : 0.0f;
        }
    }

    // Scores of keys k0 … k0+kg-1 for the group's queries into st (kg, GW): scaled, soft-capped, then masked, with
    // ALiBi, and -inf where a rule forbids (stage none or biased); or only up to the stage asked for. tmax[v]
    // takes the max over these keys per query lane. kt: the rows of keys k0 … (key_tile). cap_slope, when not
    // null and there is a soft-cap: (kg, GW) d capped / d scaled = 1 − tanh², for the backward.
    static void scores(const Head& h, const float* panel, const float* kt, std::size_t i0, std::size_t gn,
                       std::size_t k0, std::size_t kg, V* tmax, ScoresKind stage = ScoresKind::none,
                       float* cap_slope = nullptr) {
        const AttentionProblem& p = h.p;
        const RowKeys& keys = h.keys;
        const bool ruled_stage = stage == ScoresKind::none || stage == ScoresKind::biased;
        const bool masked = ruled_stage && p.rules.mask.type != MaskType::none;
        if (masked) fill_mask_tile(h, i0, gn, k0, kg);
        Rules r;
        const std::int64_t k = static_cast<std::int64_t>(k0), i = static_cast<std::int64_t>(i0);
        // Lane l sees key j when l >= j - i0 - high_shift and l <= j - i0 - low_shift, and j < len.
        r.first_blocked = k - i - keys.high_shift;
        r.last_allowed = k - i - keys.low_shift;
        r.alibi_base = k - i - keys.offset;
        r.high = ruled_stage && keys.high && r.first_blocked + static_cast<std::int64_t>(kg) - 1 > 0;
        r.low = ruled_stage && keys.low && r.last_allowed < static_cast<std::int64_t>(gn) - 1;
        r.len_from = !ruled_stage || k0 + kg <= keys.len ? kg : k0 >= keys.len ? 0 : keys.len - k0;
        r.alibi = ruled_stage && p.rules.alibi_slopes;
        r.cap_slope = cap_slope;
        // Keys [plain_begin, plain_end) of the tile need no rule: no lane's key there is hidden (a window's or the
        // causal rule's edges are ruled, the keys between them are not), on whole micro-kernels; a mask or ALiBi
        // rules every key. The epilogues give a visible score the same bits either way.
        std::size_t plain_begin = 0, plain_end = kg;
        if (masked || r.alibi) {
            plain_end = 0;
        } else {
            if (r.low) {
                const auto edge = static_cast<std::size_t>(static_cast<std::int64_t>(gn) - 1 - r.last_allowed);
                plain_begin = round_up(min_size(edge, kg), KeyRows);
            }
            if (r.high) plain_end = 1 - r.first_blocked > 0 ? static_cast<std::size_t>(1 - r.first_blocked) : 0;
            plain_end = min_size(plain_end, r.len_from);
            if (plain_end < kg) plain_end = plain_end / KeyRows * KeyRows;
            if (plain_end < plain_begin) plain_end = plain_begin = kg;
        }
        const auto run = [&](auto capped) {
            constexpr bool Capped = decltype(capped)::value;
            score_blocks<true, Capped>(h, panel, kt, gn, 0, plain_begin, r, tmax);
            score_blocks<false, Capped>(h, panel, kt, gn, plain_begin, plain_end, r, tmax);
            score_blocks<true, Capped>(h, panel, kt, gn, plain_end, kg, r, tmax);
        };
        if (p.rules.softcap > 0.0f && stage != ScoresKind::scaled) run(std::true_type{});
        else run(std::false_type{});
    }
    // What a tile's epilogue applies beside the mask tile.
    struct Rules {
        std::int64_t first_blocked = 0;  // key k0 + j is hidden from lanes below first_blocked + j (high side)
        std::int64_t last_allowed = 0;   // … and from lanes above last_allowed + j (low side)
        std::int64_t alibi_base = 0;     // key k0 + j is at j + alibi_base − lane from the lane's position
        bool high = false, low = false, alibi = false;
        std::size_t len_from = 0;        // keys of the tile from this one on are past the problem's length
        float* cap_slope = nullptr;
    };
    // The block loop of scores() over keys [jb, je) of the tile. Ruled: a mask or a rule applies to these keys; most
    // keys have none, and their epilogue is then scale (and soft-cap), store and max alone. Capped: the scores are soft-capped. The scratch
    // pointers and the scale are read once, into locals: the vector stores may alias anything, so read through h
    // they were loaded again for every vector (V8's code had about three times the instructions per vector of the
    // epilogue; the same bits).
    template <bool Ruled, bool Capped>
    static void score_blocks(const Head& h, const float* panel, const float* kt, std::size_t gn, std::size_t jb,
                             std::size_t je, const Rules& rules, V* tmax) {
        const AttentionProblem& p = h.p;
        const std::size_t nqv = (gn + W - 1) / W, E = p.in.E;
        float* const st = h.w.st;
        const float* const mask = h.w.mask;
        const float scale = p.rules.scale;
        const float cap = p.rules.softcap, inv_cap = Capped ? 1.0f / p.rules.softcap : 0.0f;
        float* const cap_slope = rules.cap_slope;
        const MaskType kind = p.rules.mask.type;
        const V lanes = O::lane_index();
        for (std::size_t j0 = jb; j0 < je; j0 += KeyRows) {
            with_count<KeyRows>(je - j0, [&](auto nk_) {
                with_count<QueryVecs>(nqv, [&](auto nq_) {
                    constexpr std::size_t NK = decltype(nk_)::value, NQ = decltype(nq_)::value;
                    Block<O, NK, NQ> acc;
                    acc.fill(O::splat(0.0f));
                    accumulate(acc, E, kt + j0 * E, E, 1, panel, GW);  // (NK, E) x (E, NQ·W)
                    for (std::size_t r = 0; r < NK; ++r) {
                        const std::size_t j = j0 + r;
                        for (std::size_t v = 0; v < NQ; ++v) {
                            V s = acc.c[r][v] * O::splat(scale);
                            if constexpr (Capped) {
                                const V t = tanh_of<O>(s * O::splat(inv_cap));
                                if (cap_slope) O::store(cap_slope + j * GW + v * W, O::splat(1.0f) - t * t);
                                s = t * O::splat(cap);
                            }
                            if constexpr (Ruled) {
                                if (kind != MaskType::none) {
                                    const V m = O::load(mask + j * GW + v * W);
                                    s = kind == MaskType::boolean ? O::select(m == O::splat(kNegInf), m, s) : s + m;
                                }
                                const std::int64_t at = static_cast<std::int64_t>(j) - static_cast<std::int64_t>(v * W);
                                if (rules.alibi) {
                                    const float distance = static_cast<float>(rules.alibi_base + at);  // j − p of lane 0
                                    s = O::fmadd(O::splat(h.slope), O::splat(distance) - lanes, s);
                                }
                                if (rules.high) {
                                    const float blocked_below = static_cast<float>(rules.first_blocked + at);
                                    s = O::select(lanes < O::splat(blocked_below), O::splat(kNegInf), s);
                                }
                                if (rules.low) {
                                    const float allowed_to = static_cast<float>(rules.last_allowed + at);
                                    s = O::select(lanes > O::splat(allowed_to), O::splat(kNegInf), s);
                                }
                                if (j >= rules.len_from) s = O::splat(kNegInf);
                            }
                            O::store(st + j * GW + v * W, s);
                            tmax[v] = O::pmax(tmax[v], s);  // a NaN score is dropped here, but its exp makes the row NaN
                        }
                    }
                });
            });
        }
    }

    // acc rows (nr, evp) of queries r0 … = rescale · acc rows + P rows · V tile, P read from st (kg, GW) or
    // weights rows. The tile's products are summed in registers, then added to acc with compensation (accc).
    static void weighted_values(const Head& h, float* acc_rows, float* comp_rows, const float* P, std::size_t p_row,
                                std::size_t p_key, std::size_t nrows, std::size_t kg, const float* vt, std::size_t ldv,
                                bool dirty, bool guarded, const float* rescale) {
        const std::size_t nvec = h.evp / W;
        for (std::size_t r0 = 0; r0 < nrows; r0 += PvRows) {
            for (std::size_t c0 = 0; c0 < nvec; c0 += PvVecs) {
                with_count<PvRows>(nrows - r0, [&](auto nr_) {
                    with_count<PvVecs>(nvec - c0, [&](auto nv_) {
                        constexpr std::size_t NR = decltype(nr_)::value, NV = decltype(nv_)::value;
                        Block<O, NR, NV> tile;
                        tile.fill(O::splat(0.0f));
                        const float* a = P + r0 * p_row;
                        if (dirty) accumulate_skipping_zeros(tile, kg, a, p_row, p_key, vt + c0 * W, ldv);
                        else accumulate(tile, kg, a, p_row, p_key, vt + c0 * W, ldv);  // (NR, kg) x (kg, NV·W)
                        for (std::size_t r = 0; r < NR; ++r) {
                            float* dst = acc_rows + (r0 + r) * h.evp + c0 * W;
                            float* cdst = comp_rows + (r0 + r) * h.evp + c0 * W;
                            // alpha = 0 (no visible key yet, or the max moved past exp's range): drop the old sum
                            // outright rather than multiply, so an inf in it cannot become NaN.
                            const float al = rescale ? rescale[r0 + r] : 1.0f;
                            for (std::size_t v = 0; v < NV; ++v) {
                                V sum = O::load(dst + v * W), c = O::load(cdst + v * W);
                                if (rescale) {
                                    sum = al == 0.0f ? O::splat(0.0f) : sum * O::splat(al);
                                    c = al == 0.0f ? O::splat(0.0f) : c * O::splat(al);
                                }
                                if (guarded) kahan_add_guarded<O>(sum, c, tile.c[r][v]);
                                else kahan_add<O>(sum, c, tile.c[r][v]);
                                O::store(dst + v * W, sum);
                                O::store(cdst + v * W, c);
                            }
                        }
                    });
                });
            }
        }
    }

    // Streaming: queries q0 … q0+Bq-1 against every key tile, online softmax, O(tile) memory.
    static void stream_block(const Head& h, std::size_t q0) {
        const AttentionProblem& p = h.p;
        const Scratch& w = h.w;
        const std::size_t nq = min_size(Bq, p.in.L - q0), groups = (nq + GW - 1) / GW;
        for (std::size_t g = 0; g < groups; ++g)
            pack_queries(h, q0 + g * GW, min_size(GW, nq - g * GW), w.qp + g * p.in.E * GW);
        for (std::size_t i = 0; i < groups * GW; ++i) w.m[i] = kNegInf, w.l[i] = 0.0f, w.lc[i] = 0.0f;
        for (std::size_t x = 0; x < nq * h.evp; ++x) w.acc[x] = 0.0f, w.accc[x] = 0.0f;

        // The keys some row of the block may see, in tiles; each group then takes the part of a tile it may see.
        const Span block = visible_keys(h, q0, nq, 0, p.in.S);
        const std::size_t kbegin = block.skip, kend = block.skip + block.count;
        bool guarded = false;  // a value tile could overflow the sums: compensate in the guarded form from then on
        const std::size_t bc = tile_size(kend - kbegin);
        for (std::size_t k0 = kbegin; k0 < kend; k0 += bc) {
            const std::size_t kn = min_size(bc, kend - k0);
            const float* kt = key_tile(h, k0, kn);
            std::size_t ldv;
            const float* vt = value_tile(h, k0, kn, &ldv);
            const Scan scanned = scan_value_tile(h, vt, ldv, kn);
            const bool dirty = !scanned.finite;
            guarded = guarded || !scanned.below;
            for (std::size_t g = 0; g < groups; ++g) {
                const std::size_t i0 = q0 + g * GW, gn = min_size(GW, nq - g * GW);
                const Span seen = visible_keys(h, i0, gn, k0, kn);
                const std::size_t kg = seen.count;
                if (kg == 0) continue;
                const std::size_t nqv = (gn + W - 1) / W;
                V tmax[QueryVecs];
                for (auto& t : tmax) t = O::splat(kNegInf);
                scores(h, w.qp + g * p.in.E * GW, kt + seen.skip * p.in.E, i0, gn, k0 + seen.skip, kg, tmax);
                if (p.rules.dropout) fill_dropout_tile(h, i0, gn, k0 + seen.skip, kg);

                // Online softmax per query lane (m: running max, l: running sum of exp(s - m)):
                // when the max moves, the old sum and output rows are rescaled by alpha = exp(m_old - m_new).
                // A max still at -inf means no visible key yet: its exps are taken against 0, so they are 0.
                // A NaN score makes its exp, so l, so the whole output row NaN, whichever operand max() keeps.
                float* m = w.m + g * GW;
                float* l = w.l + g * GW;
                float* lc = w.lc + g * GW;
                float* alpha = w.alpha + g * GW;
                for (std::size_t v = 0; v < nqv; ++v) {
                    const V m_old = O::load(m + v * W);
                    const V m_new = O::max(m_old, tmax[v]);
                    const V inf = O::splat(kNegInf), zero = O::splat(0.0f);
                    const V a = O::select(m_old == inf, zero, exp_nonpositive<O>(m_old - m_new));
                    const V shift = O::select(m_new == inf, zero, m_new);
                    V sum = zero;
                    float* sv = w.st + v * W;
                    if (!p.rules.dropout) {
                        for (std::size_t j = 0; j < kg; ++j) {
                            const V e = exp_nonpositive<O>(O::load(sv + j * GW) - shift);
                            sum = sum + e;
                            O::store(sv + j * GW, e);
                        }
                    } else {
                        for (std::size_t j = 0; j < kg; ++j) {
                            const V e = exp_nonpositive<O>(O::load(sv + j * GW) - shift);
                            sum = sum + e;  // l sums the weights before dropout
                            O::store(sv + j * GW, e * O::load(w.drop + j * GW + v * W));
                        }
                    }
                    O::store(m + v * W, m_new);
                    // l = l · alpha + this tile's sum, compensated like the output rows. Unlike those, l is
                    // multiplied even by alpha = 0: a sum of exps is finite, so it becomes 0, unless a visible
                    // score was NaN, and then it stays NaN and makes the row NaN, as SDPA's softmax does, however
                    // far a later key moves the max.
                    V lv = O::load(l + v * W) * a, lcv = O::load(lc + v * W) * a;
                    kahan_add<O>(lv, lcv, sum);
                    O::store(l + v * W, lv);
                    O::store(lc + v * W, lcv);
                    O::store(alpha + v * W, a);
                }
                // O rows of the group = alpha · O rows + P (gn, kg) · V tile (kg, Ev); P[i][j] = st[j][i].
                weighted_values(h, w.acc + g * GW * h.evp, w.accc + g * GW * h.evp, w.st, 1, GW, gn, kg,
                                vt + seen.skip * ldv, ldv, dirty, guarded, alpha);
            }
        }

        // O = acc / l; l = 0 means every key was forbidden: output 0.
        for (std::size_t i = 0; i < nq; ++i) {
            const float l = w.l[i];
            const float inv = 1.0f / l;
            float* o = h.out + (q0 + i) * p.in.Ev;
            const float* a = w.acc + i * h.evp;
            for (std::size_t c = 0; c < p.in.Ev; ++c) o[c] = l == 0.0f ? 0.0f : a[c] * inv;
        }
        // The backward recomputes the weights from each row's log-sum-exp, m + log l (-inf: no visible key).
        if (p.out.lse)
            for (std::size_t i = 0; i < nq; ++i)
                p.out.lse[h.b * p.in.L + q0 + i] = w.l[i] == 0.0f ? kNegInf : w.m[i] + std::log(w.l[i]);
    }

    // Rows (gn, kg), ld apart, = the tile (kg, GW) transposed, 4 × 4 at a time where the ops can.
    static void store_rows(const float* st, std::size_t gn, std::size_t kg, float* rows, std::size_t ld) {
        std::size_t lane = 0;
        if constexpr (O::has_transpose4)
            for (; lane + 4 <= gn; lane += 4) {
                std::size_t j = 0;
                for (; j + 4 <= kg; j += 4) {
                    const float* r[4] = {st + j * GW + lane, st + (j + 1) * GW + lane, st + (j + 2) * GW + lane,
                                         st + (j + 3) * GW + lane};
                    O::transpose4(r, rows + lane * ld + j, ld);
                }
                for (std::size_t x = 0; x < 4; ++x)
                    for (std::size_t jj = j; jj < kg; ++jj) rows[(lane + x) * ld + jj] = st[jj * GW + lane + x];
            }
        for (; lane < gn; ++lane)
            for (std::size_t j = 0; j < kg; ++j) rows[lane * ld + j] = st[j * GW + lane];
    }

    // The scores asked for (p.out.scores) of the group of rows from i0 against every key, at their stage.
    static void scores_group(const Head& h, std::size_t i0) {
        const AttentionProblem& p = h.p;
        const std::size_t gn = min_size(GW, p.in.L - i0), bc = tile_size(p.in.S);
        pack_queries(h, i0, gn, h.w.qp);
        for (std::size_t k0 = 0; k0 < p.in.S; k0 += bc) {
            const std::size_t kn = min_size(bc, p.in.S - k0);
            V unused[QueryVecs];
            for (auto& u : unused) u = O::splat(kNegInf);
            scores(h, h.w.qp, key_tile(h, k0, kn), i0, gn, k0, kn, unused, p.out.scores_kind);
            store_rows(h.w.st, gn, kn, p.out.scores + (h.b * p.in.L + i0) * p.in.S + k0, p.in.S);
        }
    }

    // Materialising: the group's weights rows (GW, S) are an output anyway, so the softmax runs on them.
    static void materialise_group(const Head& h, std::size_t i0) {
        const AttentionProblem& p = h.p;
        const Scratch& w = h.w;
        const std::size_t gn = min_size(GW, p.in.L - i0), nqv = (gn + W - 1) / W;
        pack_queries(h, i0, gn, w.qp);
        const Span seen = visible_keys(h, i0, gn, 0, p.in.S);
        const std::size_t kbegin = seen.skip, kend = seen.skip + seen.count;

        // Pass 1: scores into the weights rows (the keys some row of the group sees), and each query's max.
        V rmax[QueryVecs];
        for (auto& t : rmax) t = O::splat(kNegInf);
        const std::size_t bc = tile_size(kend - kbegin);
        for (std::size_t k0 = kbegin; k0 < kend; k0 += bc) {
            const std::size_t kg = min_size(bc, kend - k0);
            scores(h, w.qp, key_tile(h, k0, kg), i0, gn, k0, kg, rmax);
            store_rows(w.st, gn, kg, h.weights + i0 * p.in.S + k0, p.in.S);
        }
        for (std::size_t v = 0; v < nqv; ++v) O::store(w.m + v * W, rmax[v]);

        // Pass 2: each row becomes exp(s - max) / sum over the keys it may see, then dropout; the keys it may
        // not see (the rules) are 0. A row with nothing visible (max -inf) has sum 0 and stays all 0.
        for (std::size_t lane = 0; lane < gn; ++lane) {
            const std::size_t i = i0 + lane;
            float* row = h.weights + i * p.in.S;
            const std::size_t first = h.keys.first(i), n = h.keys.end(i);
            const float mx = w.m[lane];
            const V shift = O::splat(mx == kNegInf ? 0.0f : mx);
            V vsum = O::splat(0.0f), vcomp = vsum;  // compensated: a row may hold a million keys
            std::size_t j = first;
            for (; j + W <= n; j += W) {
                const V e = exp_nonpositive<O>(O::load(row + j) - shift);
                kahan_add<O>(vsum, vcomp, e);
                O::store(row + j, e);
            }
            float sum = O::hsum(vsum - vcomp);
            for (; j < n; ++j) {
                row[j] = exp_nonpositive<ScalarOps>(row[j] - (mx == kNegInf ? 0.0f : mx));
                sum += row[j];
            }
            const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
            j = first;
            for (; j + W <= n; j += W) O::store(row + j, O::load(row + j) * O::splat(inv));
            for (; j < n; ++j) row[j] *= inv;
            if (p.rules.dropout) {
                const std::uint64_t pos = (static_cast<std::uint64_t>(h.b) * p.in.L + i) * p.in.S;
                for (j = first; j < n; ++j)
                    row[j] = dropout_keep(p.rules.seed, p.rules.dropout_threshold, pos + j) ? row[j] * p.rules.keep_scale : 0.0f;
            }
            for (j = 0; j < first; ++j) row[j] = 0.0f;
            for (j = n; j < p.in.S; ++j) row[j] = 0.0f;
            // The backward recomputes the weights from each row's log-sum-exp (-inf: no visible key).
            if (p.out.lse) p.out.lse[h.b * p.in.L + i] = sum == 0.0f ? kNegInf : (mx == kNegInf ? 0.0f : mx) + std::log(sum);
        }

        // Pass 3: O rows (gn, Ev) = weights rows (gn, [kbegin, kend)) · V ([kbegin, kend), Ev).
        for (std::size_t x = 0; x < gn * h.evp; ++x) w.acc[x] = 0.0f, w.accc[x] = 0.0f;
        bool guarded = false;
        for (std::size_t k0 = kbegin; k0 < kend; k0 += bc) {
            const std::size_t kn = min_size(bc, kend - k0);
            std::size_t ldv;
            const float* vt = value_tile(h, k0, kn, &ldv);
            const Scan scanned = scan_value_tile(h, vt, ldv, kn);
            guarded = guarded || !scanned.below;
            weighted_values(h, w.acc, w.accc, h.weights + i0 * p.in.S + k0, p.in.S, 1, gn, kn, vt, ldv, !scanned.finite,
                            guarded, nullptr);
        }
        for (std::size_t lane = 0; lane < gn; ++lane)
            for (std::size_t c = 0; c < p.in.Ev; ++c) h.out[(i0 + lane) * p.in.Ev + c] = w.acc[lane * h.evp + c];
    }
};

}  // namespace
}  // namespace xattn::kernels
