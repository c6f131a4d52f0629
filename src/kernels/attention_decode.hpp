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
// instruction). A mask is applied row by row (its layout stacks the per-head rows: MaskLayout::stack); no causal rule,
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
#include "kernels/tanh.hpp"

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
            const std::size_t evp = round_up(p.in.Ev, W), R = min_size(p.in.L, kMaxRows);
            const KvLayout lay{p.in.E, p.in.Ev};
            Scratch x;
            x.qbits = c.take<float>(p.in.kv_float16 ? R * p.in.E : 0);
            x.kt = c.take<float>(p.in.kv_float16 ? kTile * p.in.E : 0);
            x.vt = c.take<float>(p.in.kv_float16 ? kTile * lay.evb() : 0);
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
    static std::size_t chunks(const AttentionProblem& p) { return p.in.S == 0 ? 1 : (p.in.S + chunk_keys(p.in.S) - 1) / chunk_keys(p.in.S); }
    static std::size_t rows(const AttentionProblem& p) { return min_size(p.in.L, kMaxRows); }
    // A chunk's partial result: running max m (R), sum l (R) and unnormalised output rows acc (R, Evp).
    static std::size_t partial_floats(const AttentionProblem& p) { return rows(p) * (2 + round_up(p.in.Ev, W)); }
    // The call's work, about FLOPs: per task (problem × chunk of keys) the products, and the reading of each key
    // and value counted as a few more.
    static double work(const AttentionProblem& p) {
        const double keys = static_cast<double>(min_size(chunk_keys(p.in.S), p.in.S));
        return static_cast<double>(p.in.batch * chunks(p)) * (2.0 * static_cast<double>(rows(p)) + 4.0) * keys *
               static_cast<double>(p.in.E + p.in.Ev);
    }
    static unsigned workers(const AttentionProblem& p) { return useful_workers(p.threads, p.in.batch * chunks(p), work(p)); }
    static std::size_t stride(const AttentionProblem& p) {
        return static_cast<std::size_t>(worker_stride(Scratch::layout(p, nullptr, nullptr)));
    }
    static std::size_t partials_bytes(const AttentionProblem& p) {
        return chunks(p) == 1 ? 0 : static_cast<std::size_t>(worker_stride(p.in.batch * chunks(p) * partial_floats(p) * sizeof(float)));
    }
    static std::size_t workspace(const AttentionProblem& p) { return partials_bytes(p) + workers(p) * stride(p) + Carver::kSlack; }

    static void run(const AttentionProblem& p, void* workspace) {
        Carver c(workspace);  // the partials are read as vectors: 64-byte aligned
        const std::size_t nc = chunks(p), ck = chunk_keys(p.in.S), pf = partial_floats(p), step = stride(p);
        float* partials = c.take<float>(partials_bytes(p) / sizeof(float));
        unsigned char* scratch = c.take<unsigned char>(0);
        const std::size_t ks = p.in.key_stride ? p.in.key_stride : p.in.S * p.in.E, vs = p.in.value_stride ? p.in.value_stride : p.in.S * p.in.Ev;
        parallel_for(p.in.batch * nc, workers(p), work(p), [&](std::size_t task, unsigned worker) {
            Scratch w;
            Scratch::layout(p, scratch + worker * step, &w);
            const std::size_t b = task / nc, chunk = task % nc;
            const std::size_t kv = b / p.in.q_heads * p.in.kv_heads + b % p.in.q_heads / (p.in.q_heads / p.in.kv_heads);
            const std::size_t k_begin = chunk * ck, k_end = min_size(p.in.S, k_begin + ck);
            problem(p, w, b, p.in.query + b * p.in.L * p.in.E, p.in.key ? p.in.key + kv * ks : nullptr,
                    p.in.key16 ? p.in.key16 + kv * ks : nullptr, p.in.value ? p.in.value + kv * vs : nullptr,
                    p.in.value16 ? p.in.value16 + kv * vs : nullptr, k_begin, k_end, p.out.output + b * p.in.L * p.in.Ev,
                    nc == 1 ? nullptr : partials + task * pf);
        });
        if (nc == 1) return;
        for (std::size_t b = 0; b < p.in.batch; ++b) merge(p, partials + b * nc * pf, nc, p.out.output + b * p.in.L * p.in.Ev);
    }

    // out rows = Σ_c e^(m_c − M) acc_c / Σ_c e^(m_c − M) l_c over the chunks c in order, M = max_c m_c.
    static void merge(const AttentionProblem& p, const float* parts, std::size_t nc, float* out) {
        const std::size_t R = rows(p), evp = round_up(p.in.Ev, W), pf = partial_floats(p);
        for (std::size_t r = 0; r < R; ++r) {
            float M = kNegInf;
            for (std::size_t c = 0; c < nc; ++c) {
                const float m = parts[c * pf + r];
                M = m > M || m != m ? m : M;
            }
            float l = 0.0f;
            float* o = out + r * p.in.Ev;
            for (std::size_t x = 0; x < p.in.Ev; ++x) o[x] = 0.0f;
            for (std::size_t c = 0; c < nc; ++c) {
                const float* part = parts + c * pf;
                const float m = part[r];
                const float f = m == kNegInf ? 0.0f : std::exp(m - M);  // a NaN max makes the row NaN, as in SDPA
                l += f * part[R + r];
                const float* acc = part + 2 * R + r * evp;
                for (std::size_t x = 0; x < p.in.Ev; ++x) o[x] += f * acc[x];
            }
            const float inv = 1.0f / l;
            for (std::size_t x = 0; x < p.in.Ev; ++x) o[x] = l == 0.0f ? 0.0f : o[x] * inv;
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

    // The rules of one stacked row (kernels.hpp, AttentionRules::stack): the keys it sees (logical: key j is the
    // element's j-th oldest), its position's offset, ALiBi's slope of its head and where its mask row starts.
    struct RowRule {
        RowKeys keys;
        std::size_t i;        // its row within its head
        float slope;
        std::size_t mask_at;  // mask element (row, key 0)
    };
    // The slots a problem reads, [begin, end) (whole tiles from a tile boundary), its element, and its ring: key j in
    // slot (start + j) % ring, and only the slots that hold one of its len keys are keys (ring 0: slot j is key j).
    struct Slots {
        std::size_t begin, end, element, start, ring, len;
        std::size_t key(std::size_t slot) const { return ring ? (slot + ring - start) % ring : slot; }
    };

    static Slots rules_of(const AttentionProblem& p, std::size_t b, std::size_t R, RowRule* rule) {
        const AttentionRules& r = p.rules;
        const std::size_t per = r.stack_rows ? r.stack_rows : R;
        Slots s{};
        s.element = b * r.stack / r.heads;
        for (std::size_t x = 0; x < R; ++x) {
            const std::size_t hb = b * r.stack + x / per;  // the rules' problem of row x
            rule[x].keys = row_keys(p, hb, per);
            rule[x].i = x % per;
            rule[x].slope = r.alibi_slopes ? r.alibi_slopes[hb % r.heads] : 0.0f;
            rule[x].mask_at = r.mask.type == MaskType::none ? 0 : mask_row_offset(r, b, x);
        }
        s.len = rule[0].keys.len;
        const std::uint32_t* ring = p.in.kv_ring ? p.in.kv_ring + 2 * s.element : nullptr;
        if (ring && (ring[0] != 0 || ring[1] != s.len)) {  // rolled: every used slot, the rules key by key
            s.start = ring[0], s.ring = p.in.kv_capacity, s.begin = 0, s.end = ring[1];
            return s;
        }
        // Slots are keys: from the first key a row sees to the last.
        s.begin = rule[0].keys.first(rule[0].i), s.end = 0;
        for (std::size_t x = 0; x < R; ++x) {
            s.begin = min_size(s.begin, rule[x].keys.first(rule[x].i));
            s.end = s.end > rule[x].keys.end(rule[x].i) ? s.end : rule[x].keys.end(rule[x].i);
        }
        return s;
    }

    // Whether a row's scores over the slots [k0, k0 + kn) need the rules key by key: a mask, ALiBi, or a key it may
    // not see among them.
    static bool ruled(const AttentionProblem& p, const RowRule& rule, const Slots& s, std::size_t k0, std::size_t kn) {
        if (p.rules.mask.type != MaskType::none || p.rules.alibi_slopes) return true;
        const std::size_t first = rule.keys.first(rule.i), end = rule.keys.end(rule.i);
        if (s.ring) return first > 0 || end < s.len || s.end != s.len;
        return k0 < first || k0 + kn > end;
    }

    // The score of the key in `slot` for one row from its dot product, under the rules.
    static float ruled_score(const AttentionProblem& p, const RowRule& rule, const Slots& s, std::size_t slot, float dot) {
        const AttentionRules& r = p.rules;
        const std::size_t j = s.key(slot);
        if (j >= s.len || j < rule.keys.first(rule.i) || j >= rule.keys.end(rule.i)) return kNegInf;
        float x = dot * r.scale;
        if (r.softcap > 0.0f) x = tanh_of<ScalarOps>(x * (1.0f / r.softcap)) * r.softcap;
        if (r.mask.type == MaskType::boolean && !r.mask.bools[rule.mask_at + j * r.mask.key_stride]) return kNegInf;
        if (r.mask.type == MaskType::additive) x += r.mask.values[rule.mask_at + j * r.mask.key_stride];
        if (r.alibi_slopes) {
            const std::int64_t position = static_cast<std::int64_t>(rule.i) + rule.keys.offset;
            x += rule.slope * static_cast<float>(static_cast<std::int64_t>(j) - position);
        }
        return x;
    }

    // Keys [k_begin, k_end) of problem b: into out (R, Ev) when `part` is null, else into the chunk's partial.
    // k / k16 and v / v16: the problem's key blocks and value tiles (kv_layout.hpp); k_begin is a whole tile.
    static void problem(const AttentionProblem& p, const Scratch& w, std::size_t b, const float* q, const float* k,
                        const std::uint16_t* k16, const float* v, const std::uint16_t* v16, std::size_t k_begin,
                        std::size_t k_end, float* out, float* part) {
        static_assert(kTile % kKeyBlock == 0, "tiles start on key blocks");
        const std::size_t R = p.in.L, E = p.in.E, Ev = p.in.Ev;
        std::size_t S = k_end;
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
        bool bits_ok = k16 && p.in.kv_position_flags;
        for (std::size_t x = 0; bits_ok && x < R * E; ++x) bits_ok = std::fabs(q[x]) < 65536.0f;  // NaN fails too
        if (bits_ok)
            for (std::size_t x = 0; x < R * E; ++x) w.qbits[x] = q[x] * 0x1p112f;

        // The rows' rules and the slots to read: the keys [k_begin, S) of the chunk, within the slots the problem's
        // element uses, from the tile where the first row's keys start (slots are keys but in a rolled ring).
        RowRule rule[kMaxRows];
        const Slots slots = rules_of(p, b, R, rule);
        const std::uint8_t* position_flags = p.in.kv_position_flags ? p.in.kv_position_flags + slots.element * p.in.kv_capacity : nullptr;
        S = min_size(S, slots.end);
        if (slots.begin > k_begin) k_begin = slots.begin / kTile * kTile;

        const bool ask_ahead = R > 1 && k;  // see touch_tile
        if (ask_ahead && k_begin < S) touch_tile(k, v, k_begin, min_size(kTile, S - k_begin), lay);
        for (std::size_t k0 = k_begin; k0 < S; k0 += kTile) {
            const std::size_t kn = min_size(kTile, S - k0), kb = round_up(kn, kKeyBlock);
            if (ask_ahead && k0 + kTile < S) touch_tile(k, v, k0 + kTile, min_size(kTile, S - k0 - kTile), lay);
            // Bit 0: a key of the tile holds inf or NaN, bit 1: a value does; both when the cache does not say.
            unsigned flags = position_flags ? 0u : 3u;
            for (std::size_t j = 0; position_flags && j < kn; ++j) flags |= position_flags[k0 + j];
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
                if (ruled(p, rule[r], slots, k0, kn)) {
                    // The row's rules key by key, as the tiled kernels apply them: scaled, soft-capped, then -inf
                    // for a key it may not see or a false boolean, a float mask added, ALiBi's slope · (j − p).
                    for (; x < kn; ++x) {
                        sr[x] = ruled_score(p, rule[r], slots, k0 + x, sr[x]);
                        tmax = larger(sr[x], tmax) ? sr[x] : tmax;
                    }
                }
                const float cap = p.rules.softcap, inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
                V vmax = O::splat(kNegInf);
                for (; x + W <= kn; x += W) {
                    V scaled = O::load(sr + x) * O::splat(p.rules.scale);
                    if (cap > 0.0f) scaled = tanh_of<O>(scaled * O::splat(inv_cap)) * O::splat(cap);
                    O::store(sr + x, scaled);
                    vmax = O::select(larger(scaled, vmax), scaled, vmax);
                }
                alignas(64) float lanes[W];
                O::store(lanes, vmax);
                for (std::size_t l = 0; l < W; ++l) tmax = larger(lanes[l], tmax) ? lanes[l] : tmax;
                for (; x < kn; ++x) {
                    sr[x] *= p.rules.scale;
                    if (cap > 0.0f) sr[x] = tanh_of<ScalarOps>(sr[x] * inv_cap) * cap;
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
