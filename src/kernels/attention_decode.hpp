// Attention of a few query rows (decoding from a KV cache: the G query heads of one key/value head, L = 1)
// against every cached key, streaming, each key and value read once per problem:
//
//   for each tile of up to kTile keys (float16 storage read in place as bits, or widened into scratch; problem):
//     s[r][j] = scale · q_r · k_j      dot products with keys in vector lanes (the cache's key blocks), q_r[e]
//                                       broadcast: no sums across lanes
//     online softmax per row r          running max m_r and sum l_r; old rows rescaled when the max moves
//     acc_r += Σ_j p[r][j] · v_j        the micro-kernel (micro.hpp) with the rows' p as a, V rows as B
//   out_r = acc_r / l_r
//
// The wide streaming kernel (attention.hpp) puts queries in vector lanes, which a few rows leave mostly
// empty; here the lanes hold keys for the scores and run along Ev for the products, so a single row wastes
// none. The keys and values are a cache's, in the blocks of kv_layout.hpp, read where they are: every hot loop
// steps through memory by a fixed stride, which the hardware prefetchers follow (WebAssembly has no prefetch
// instruction). A mask is applied row by row (p.plan is then the per-head plan that places it); no causal rule,
// no dropout, no weights: decoding steps have none (KvCache routes anything else to the tiled kernels). A value
// tile holding inf or NaN takes the select-guarded product, as in the wide kernel; the cache's per-position flags
// say which tiles do (kv_position_flags; without them every tile takes it).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/attention.hpp"
#include "kernels/kahan.hpp"
#include "kernels/kv_layout.hpp"
#include "kernels/parallel.hpp"

namespace xattn::kernels {
namespace {

// PvRows × PvVecs: the P·V block (rows × vectors of Ev); a block of one row takes 1 × 2·PvVecs, as many
// accumulators, and float16 tiles read in place take blocks of 4 rows where PvRows is less (see problem); no
// block is wider than a column block of the cache's values (kValueCols). ScoreAccs: the score blocks'
// accumulators (rows × key vectors), 8 where V8 has 16 vector registers, 16 where it has 32 (blocking.cpp).
template <class O, std::size_t PvRows, std::size_t PvVecs, std::size_t ScoreAccs = 8>
struct DecodeKernel {
    using V = typename O::V;
    static constexpr std::size_t W = O::width;
    static constexpr std::size_t kTile = kValueTile;  // keys per tile: one tile of the cache's values
    static constexpr std::size_t kMaxRows = 16; // query rows per problem this kernel takes (KvCache's limit)
    static constexpr float kNegInf = -std::numeric_limits<float>::infinity();

    struct Scratch {
        float* qbits;  // (R, E)       the query rows times 2^112, for float16 tiles read in place (see problem)
        float* kt;     // (kTile, E)   a float16 key tile widened, in the cache's key blocks
        float* vt;     // (kTile, Evb) a float16 value tile widened, in the cache's column blocks
        float* s;      // (R, kTile)   scores, then probabilities
        float* acc;    // (R, Evp)     unnormalised output rows
        float* accc;   // (R, Evp)     their Kahan compensation
        float* m;      // (R)
        float* l;      // (R)
        float* lc;     // (R)          its compensation
        float* alpha;  // (R)

        static std::size_t layout(const AttentionProblem& p, unsigned char* base, Scratch* out) {
            Carver c(base);
            const std::size_t evp = round_up(p.Ev, W), R = min_size(p.L, kMaxRows);
            const KvLayout lay{p.E, p.Ev};
            Scratch x;
            x.qbits = c.take<float>(p.kv_float16 ? R * p.E : 0);
            x.kt = c.take<float>(p.kv_float16 ? kTile * p.E : 0);
            x.vt = c.take<float>(p.kv_float16 ? kTile * lay.evb() : 0);
            x.s = c.take<float>(R * kTile);
            x.acc = c.take<float>(R * evp);
            x.accc = c.take<float>(R * evp);
            x.m = c.take<float>(R);
            x.l = c.take<float>(R);
            x.lc = c.take<float>(R);
            x.alpha = c.take<float>(R);
            if (out) *out = x;
            return static_cast<std::size_t>(c.bytes());
        }
    };

    // Tasks: (problem b, chunk of keys). Chunks depend on S alone (at least kChunkMin keys, at most kMaxChunks
    // of them), never on the thread count: a step with fewer problems than threads still spreads over every
    // thread ("flash decoding"), and each chunk's partial softmax statistics are merged in chunk order.
    static constexpr std::size_t kChunkMin = 1024, kMaxChunks = 64;
    static std::size_t chunk_keys(std::size_t S) {
        const std::size_t c = round_up((S + kMaxChunks - 1) / kMaxChunks, kTile);
        return c < kChunkMin ? kChunkMin : c;
    }
    static std::size_t chunks(const AttentionProblem& p) { return p.S == 0 ? 1 : (p.S + chunk_keys(p.S) - 1) / chunk_keys(p.S); }
    static std::size_t rows(const AttentionProblem& p) { return min_size(p.L, kMaxRows); }
    // A chunk's partial result: running max m (R), sum l (R) and unnormalised output rows acc (R, Evp).
    static std::size_t partial_floats(const AttentionProblem& p) { return rows(p) * (2 + round_up(p.Ev, W)); }
    // The call's work, about FLOPs: per task (problem × chunk of keys) the products, and the reading of each key
    // and value counted as a few more.
    static double work(const AttentionProblem& p) {
        const double keys = static_cast<double>(min_size(chunk_keys(p.S), p.S));
        return static_cast<double>(p.batch * chunks(p)) * (2.0 * static_cast<double>(rows(p)) + 4.0) * keys *
               static_cast<double>(p.E + p.Ev);
    }
    static unsigned workers(const AttentionProblem& p) { return useful_workers(p.threads, p.batch * chunks(p), work(p)); }
    static std::size_t stride(const AttentionProblem& p) {
        return static_cast<std::size_t>(worker_stride(Scratch::layout(p, nullptr, nullptr)));
    }
    static std::size_t partials_bytes(const AttentionProblem& p) {
        return chunks(p) == 1 ? 0 : static_cast<std::size_t>(worker_stride(p.batch * chunks(p) * partial_floats(p) * sizeof(float)));
    }
    static std::size_t workspace(const AttentionProblem& p) { return partials_bytes(p) + workers(p) * stride(p) + Carver::kSlack; }

    static void run(const AttentionProblem& p, void* workspace) {
        Carver c(workspace);  // the partials are read as vectors: 64-byte aligned
        const std::size_t nc = chunks(p), ck = chunk_keys(p.S), pf = partial_floats(p), step = stride(p);
        float* partials = c.take<float>(partials_bytes(p) / sizeof(float));
        unsigned char* scratch = c.take<unsigned char>(0);
        const std::size_t ks = p.key_stride ? p.key_stride : p.S * p.E, vs = p.value_stride ? p.value_stride : p.S * p.Ev;
        parallel_for(p.batch * nc, workers(p), work(p), [&](std::size_t task, unsigned worker) {
            Scratch w;
            Scratch::layout(p, scratch + worker * step, &w);
            const std::size_t b = task / nc, chunk = task % nc;
            const std::size_t kv = b / p.q_heads * p.kv_heads + b % p.q_heads / (p.q_heads / p.kv_heads);
            const std::size_t k_begin = chunk * ck, k_end = min_size(p.S, k_begin + ck);
            problem(p, w, b, p.query + b * p.L * p.E, p.key ? p.key + kv * ks : nullptr,
                    p.key16 ? p.key16 + kv * ks : nullptr, p.value ? p.value + kv * vs : nullptr,
                    p.value16 ? p.value16 + kv * vs : nullptr, k_begin, k_end, p.output + b * p.L * p.Ev,
                    nc == 1 ? nullptr : partials + task * pf);
        });
        if (nc == 1) return;
        for (std::size_t b = 0; b < p.batch; ++b) merge(p, partials + b * nc * pf, nc, p.output + b * p.L * p.Ev);
    }

    // out rows = Σ_c e^(m_c − M) acc_c / Σ_c e^(m_c − M) l_c over the chunks c in order, M = max_c m_c.
    static void merge(const AttentionProblem& p, const float* parts, std::size_t nc, float* out) {
        const std::size_t R = rows(p), evp = round_up(p.Ev, W), pf = partial_floats(p);
        for (std::size_t r = 0; r < R; ++r) {
            float M = kNegInf;
            for (std::size_t c = 0; c < nc; ++c) {
                const float m = parts[c * pf + r];
                M = m > M || m != m ? m : M;
            }
            float l = 0.0f;
            float* o = out + r * p.Ev;
            for (std::size_t x = 0; x < p.Ev; ++x) o[x] = 0.0f;
            for (std::size_t c = 0; c < nc; ++c) {
                const float* part = parts + c * pf;
                const float m = part[r];
                const float f = m == kNegInf ? 0.0f : std::exp(m - M);  // a NaN max makes the row NaN, as in SDPA
                l += f * part[R + r];
                const float* acc = part + 2 * R + r * evp;
                for (std::size_t x = 0; x < p.Ev; ++x) o[x] += f * acc[x];
            }
            const float inv = 1.0f / l;
            for (std::size_t x = 0; x < p.Ev; ++x) o[x] = l == 0.0f ? 0.0f : o[x] * inv;
        }
    }

    // Asks for the key blocks and value tile of the tile at k0 (n positions, float32) ahead of their use: one load
    // per cache line whose value is dropped (WebAssembly has no prefetch instruction; volatile, so the compiler
    // keeps it). The blocks stream in by themselves while a one-row step computes, and there asking ahead made
    // steps slower; a grouped-query step spends four query heads of products on each key, and for float32 ones
    // asking for the next tile made cold steps faster (float16 ones slower, so they are not asked for), timed
    // against steps without it (docs/performance.md, "No prefetch instruction").
    static void touch_tile(const float* k, const float* v, std::size_t k0, std::size_t n, const KvLayout& lay) {
        const auto touch = [](const float* from, std::size_t floats) {
            const unsigned char* b = reinterpret_cast<const unsigned char*>(from);
            for (std::size_t x = 0; x < floats * sizeof(float); x += 64) {
#if defined(__wasm__)
                (void)*reinterpret_cast<const volatile unsigned char*>(b + x);
#else
                __builtin_prefetch(b + x);
#endif
            }
        };
        touch(k + KvLayout::key_block(k0, lay.E), n * lay.E);
        touch(v + lay.value_tile(k0), n * lay.evb());
    }

    // s[r][j0 + j] = q_r · k_(j0 + j) for NR query rows (q rows E apart) × KV vectors of keys (s rows kTile
    // apart), from the key block at kb (kv_layout.hpp: element e of its keys is a run of kKeyBlock, kb pointing
    // into it at key j0): per e, KV key vectors loaded and q_r[e] broadcast, each key summing its E products in
    // order in its lane. At most ScoreAccs accumulators beside the KV + 1 operands: V8 keeps them in registers
    // in a function of their own (see "Registers in V8" in src/kernels/README.md).
    // kb is float32, or float16 read as its bits (load_operand; q then holds 2^112 · the query).
    template <std::size_t NR, std::size_t KV, class TK>
    XATTN_NOINLINE static void score_block(const float* q, std::size_t E, const TK* kb, float* s) {
        V acc[NR][KV];
        for (std::size_t r = 0; r < NR; ++r)
            for (std::size_t i = 0; i < KV; ++i) acc[r][i] = O::splat(0.0f);
        for (std::size_t e = 0; e < E; ++e) {
            const TK* run = kb + e * kKeyBlock;
            V kv[KV];
            for (std::size_t i = 0; i < KV; ++i) kv[i] = load_operand<O>(run + i * W);
            for (std::size_t r = 0; r < NR; ++r) {
                const V qe = O::splat(q[r * E + e]);
                for (std::size_t i = 0; i < KV; ++i) acc[r][i] = O::fmadd(qe, kv[i], acc[r][i]);
            }
        }
        for (std::size_t r = 0; r < NR; ++r)
            for (std::size_t i = 0; i < KV; ++i) O::store(s + r * kTile + i * W, acc[r][i]);
    }

    // acc rows r0 … r0+NR-1, vectors c0 … c0+NV-1 of Ev: alpha · acc + P rows (in s) · those columns of the value
    // tile, the tile's products summed in registers, then added to acc with compensation. The columns are kn rows
    // `ld` apart (within one column block) from v_bits, float16 bits read in place (P then holds 2^112 · the
    // probabilities), or else from vb.
    template <std::size_t NR, std::size_t NV>
    XATTN_NOINLINE static void weighted_block(const Scratch& w, std::size_t r0, std::size_t c0, std::size_t kn,
                                              std::size_t evp, const std::uint16_t* v_bits, const float* vb,
                                              std::size_t ld, bool dirty) {
        Block<O, NR, NV> tile;
        tile.fill(O::splat(0.0f));
        const float* pa = w.s + r0 * kTile;
        if (v_bits) accumulate(tile, kn, pa, kTile, 1, v_bits, ld);
        else if (dirty) accumulate_skipping_zeros(tile, kn, pa, kTile, 1, vb, ld);
        else accumulate(tile, kn, pa, kTile, 1, vb, ld);
        for (std::size_t rr = 0; rr < NR; ++rr) {
            const float a = w.alpha[r0 + rr];
            float* dst = w.acc + (r0 + rr) * evp + c0 * W;
            float* cdst = w.accc + (r0 + rr) * evp + c0 * W;
            for (std::size_t vv = 0; vv < NV; ++vv) {
                V sum = O::load(dst + vv * W), c = O::load(cdst + vv * W);
                sum = a == 0.0f ? O::splat(0.0f) : sum * O::splat(a);
                c = a == 0.0f ? O::splat(0.0f) : c * O::splat(a);
                kahan_add_guarded<O>(sum, c, tile.c[rr][vv]);
                O::store(dst + vv * W, sum);
                O::store(cdst + vv * W, c);
            }
        }
    }

    // Offset of the mask element of problem b's row r and key 0. The rows are the G query heads of the key/value
    // head, L rows each; p.plan is the per-head plan (B, Hq, L, S), whose problem batch · Hq + head the row is.
    static std::size_t mask_row(const AttentionProblem& p, std::size_t b, std::size_t r) {
        const SdpaPlan& per_head = *p.plan;
        const std::size_t Hq = per_head.q_heads, Hkv = per_head.kv_heads, G = Hq / Hkv, L = per_head.L;
        return per_head.mask_row_offset(b / Hkv * Hq + b % Hkv * G + r / L, r % L);
    }

    // Keys [k_begin, k_end) of problem b: into out (R, Ev) when `part` is null, else into the chunk's partial.
    // k / k16 and v / v16: the problem's key blocks and value tiles (kv_layout.hpp); k_begin is a whole tile.
    static void problem(const AttentionProblem& p, const Scratch& w, std::size_t b, const float* q, const float* k,
                        const std::uint16_t* k16, const float* v, const std::uint16_t* v16, std::size_t k_begin,
                        std::size_t k_end, float* out, float* part) {
        const std::size_t R = p.L, S = k_end, E = p.E, Ev = p.Ev;
        const std::size_t evp = round_up(Ev, W);
        const KvLayout lay{E, Ev};
        const std::size_t evb = lay.evb();
        for (std::size_t r = 0; r < R; ++r) w.m[r] = kNegInf, w.l[r] = 0.0f, w.lc[r] = 0.0f;
        for (std::size_t x = 0; x < R * evp; ++x) w.acc[x] = 0.0f, w.accc[x] = 0.0f;
        // float16 tiles are read in place, as their bits (value · 2^-112, load_half_bits), when every |q| < 2^16
        // (so that 2^112 · q stays finite) and the cache vouches that the tile holds no inf or NaN
        // (kv_position_flags). 2^112 then goes into the query rows and the probabilities: exact powers of two,
        // so every product, and the result, is the one the widened tile gives, without widening it into scratch
        // and reading it back. Other tiles are widened.
        bool bits_ok = k16 && p.kv_position_flags;
        for (std::size_t x = 0; bits_ok && x < R * E; ++x) bits_ok = std::fabs(q[x]) < 65536.0f;  // NaN fails too
        if (bits_ok)
            for (std::size_t x = 0; x < R * E; ++x) w.qbits[x] = q[x] * 0x1p112f;

        const bool ask_ahead = R > 1 && k;  // see touch_tile
        if (ask_ahead && k_begin < S) touch_tile(k, v, k_begin, min_size(kTile, S - k_begin), lay);
        for (std::size_t k0 = k_begin; k0 < S; k0 += kTile) {
            const std::size_t kn = min_size(kTile, S - k0), kb = round_up(kn, kKeyBlock);
            if (ask_ahead && k0 + kTile < S) touch_tile(k, v, k0 + kTile, min_size(kTile, S - k0 - kTile), lay);
            // Bit 0: a key of the tile holds inf or NaN, bit 1: a value does; both when the cache does not say.
            unsigned flags = p.kv_position_flags ? 0u : 3u;
            for (std::size_t j = 0; p.kv_position_flags && j < kn; ++j) flags |= p.kv_position_flags[k0 + j];
            const bool in_place = bits_ok && flags == 0;
            // The tile's key blocks and value tile as floats: in place, or float16 widened into scratch (whole
            // blocks and the whole tile; positions past kn are never used).
            const std::size_t key_at = KvLayout::key_block(k0, E), value_at = lay.value_tile(k0);
            const float* kt = k ? k + key_at : nullptr;
            const float* vt = v ? v + value_at : nullptr;
            if (k16 && !in_place) {
                widen_halves<O>(k16 + key_at, kb * E, w.kt);
                widen_halves<O>(v16 + value_at, kTile * evb, w.vt);
                kt = w.kt, vt = w.vt;
            }
            // Scores of every row against the tile's keys: blocks of up to 4 rows × KV key vectors, as many of them
            // as fit ScoreAccs accumulators (score_block), over whole key blocks (scores past kn are never used).
            auto scores = [&](const float* qr, const auto* keys) {
                for (std::size_t r0 = 0; r0 < R; r0 += 4)
                    with_count<4>(R - r0, [&](auto nr_) {
                        constexpr std::size_t NR = decltype(nr_)::value, per_block = kKeyBlock / W;
                        constexpr std::size_t KV = min_size(per_block, NR >= ScoreAccs ? 1 : ScoreAccs / NR);
                        static_assert(kKeyBlock % W == 0 && per_block % KV == 0, "key vectors of a block");
                        for (std::size_t j0 = 0; j0 < kb; j0 += kKeyBlock)
                            for (std::size_t i0 = 0; i0 < per_block; i0 += KV)
                                score_block<NR, KV>(qr + r0 * E, E, keys + KvLayout::key_block(j0, E) + i0 * W,
                                                    w.s + r0 * kTile + j0 + i0 * W);
                    });
            };
            if (in_place) scores(w.qbits, k16 + key_at);
            else scores(q, kt);
            const float pscale = in_place ? 0x1p112f : 1.0f;  // the probabilities as the value bits need them
            for (std::size_t r = 0; r < R; ++r) {
                float* sr = w.s + r * kTile;
                // Online softmax of the row over this tile (scaled scores; a NaN makes the row NaN, as in SDPA).
                // The max is taken per lane, then across the lanes, by one rule: a NaN wins, else the larger.
                const auto larger = [](auto x, auto m) { return (x > m) | (x != x); };
                float tmax = kNegInf;
                std::size_t x = 0;
                if (p.mask_kind != MaskKind::none) {
                    // The row's mask, as the tiled kernels apply it: a false boolean forbids (-inf), a float adds.
                    const std::size_t ks = p.mask_key_stride, at = mask_row(p, b, r) + k0 * ks;
                    for (; x < kn; ++x) {
                        const float scaled = sr[x] * p.scale;
                        sr[x] = p.mask_kind == MaskKind::boolean ? (p.mask_bools[at + x * ks] ? scaled : kNegInf)
                                                                 : scaled + p.mask_values[at + x * ks];
                        tmax = larger(sr[x], tmax) ? sr[x] : tmax;
                    }
                }
                V vmax = O::splat(kNegInf);
                for (; x + W <= kn; x += W) {
                    const V scaled = O::load(sr + x) * O::splat(p.scale);
                    O::store(sr + x, scaled);
                    vmax = O::select(larger(scaled, vmax), scaled, vmax);
                }
                alignas(64) float lanes[W];
                O::store(lanes, vmax);
                for (std::size_t l = 0; l < W; ++l) tmax = larger(lanes[l], tmax) ? lanes[l] : tmax;
                for (; x < kn; ++x) {
                    sr[x] *= p.scale;
                    tmax = larger(sr[x], tmax) ? sr[x] : tmax;
                }
                const float m_old = w.m[r];
                const float m_new = m_old > tmax ? m_old : tmax;
                const float a = m_old == kNegInf ? 0.0f : std::exp(m_old - m_new);
                const float shift = m_new == kNegInf ? 0.0f : m_new;
                V vsum = O::splat(0.0f);
                for (x = 0; x + W <= kn; x += W) {
                    const V e = exp_nonpositive<O>(O::load(sr + x) - O::splat(shift));
                    vsum = vsum + e;
                    O::store(sr + x, e * O::splat(pscale));
                }
                float sum = O::hsum(vsum);
                for (; x < kn; ++x) {
                    const float e = exp_nonpositive<ScalarOps>(sr[x] - shift);
                    sum += e;
                    sr[x] = e * pscale;
                }
                w.m[r] = m_new;
                // l = l · a + sum, compensated (Kahan) as the wide kernel's is: a million keys lose no more than a tile.
                // Multiplied even by a = 0, as there: a NaN a visible score put in l stays, and the row is NaN.
                float l = w.l[r] * a, lc = w.lc[r] * a;
                kahan_add_guarded<ScalarOps>(l, lc, sum);
                w.l[r] = l;
                w.lc[r] = lc;
                w.alpha[r] = a;
            }
            // acc rows (R, evp) = alpha · acc + P (R, kn) · V tile (kn, evp), column block by column block.
            const bool dirty = (flags & 2u) != 0;
            const std::uint16_t* v_bits = in_place ? v16 + value_at : nullptr;
            // In blocks of BR rows × (PvRows · PvVecs / BR) vectors, the same accumulators whatever BR. A value
            // vector is loaded (and, read in place, widened) once per block of rows: so float16 tiles read in
            // place take blocks of 4 rows where there are 4, widening each vector once for the 4 query heads of
            // a grouped-query step rather than twice (faster, cold and back to back, where PvRows is 2).
            // Each output element still sums its keys in order, so the block shape leaves the result's bits alone.
            const auto weighted = [&](auto block_rows_) {
                constexpr std::size_t BR = decltype(block_rows_)::value, BV = PvRows * PvVecs / BR;
                for (std::size_t r0 = 0; r0 < R; r0 += BR)
                    with_count<BR>(R - r0, [&](auto nr_) {
                        // A block of one row (multi-head decoding, or the last of an odd count) takes twice the
                        // vectors, in the accumulators the other rows would take, up to a column block.
                        constexpr std::size_t NR = decltype(nr_)::value;
                        constexpr std::size_t NV = min_size(NR == 1 ? 2 * BV : BV, kValueCols / W);
                        for (std::size_t cb = 0; cb * kValueCols < evp; ++cb) {
                            // Vectors c0 … of acc, columns cb · kValueCols … of the tile: this block's, up to evp.
                            const std::size_t ld = lay.value_width(cb), from = cb * kValueCols;
                            const std::size_t nvec = (min_size(from + ld, evp) - from) / W;
                            const std::size_t at = from * kTile;  // the column block within the tile
                            for (std::size_t c = 0; c < nvec; c += NV)
                                with_count<NV>(nvec - c, [&](auto nv_) {
                                    weighted_block<NR, decltype(nv_)::value>(
                                        w, r0, from / W + c, kn, evp, v_bits ? v_bits + at + c * W : nullptr,
                                        v_bits ? nullptr : vt + at + c * W, ld, dirty);
                                });
                        }
                    });
            };
            constexpr std::size_t kInPlaceRows = PvRows < 4 && PvRows * PvVecs % 4 == 0 ? 4 : PvRows;
            if (v_bits && R >= kInPlaceRows) weighted(std::integral_constant<std::size_t, kInPlaceRows>{});
            else weighted(std::integral_constant<std::size_t, PvRows>{});
        }
        if (part) {  // m (R), l (R), acc (R, evp), with the compensation taken back out
            for (std::size_t r = 0; r < R; ++r) part[r] = w.m[r], part[R + r] = w.l[r] - w.lc[r];
            for (std::size_t x = 0; x < R * evp; ++x) part[2 * R + x] = w.acc[x] - w.accc[x];
            return;
        }
        for (std::size_t r = 0; r < R; ++r) {
            const float l = w.l[r], inv = 1.0f / l;
            for (std::size_t c = 0; c < Ev; ++c) out[r * Ev + c] = l == 0.0f ? 0.0f : w.acc[r * evp + c] * inv;
        }
    }
};

}  // namespace
}  // namespace xattn::kernels
