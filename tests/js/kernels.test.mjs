// The kernels through the JS API on every build (golden.mjs BUILDS), against the float64 reference
// (web/src/shared/attention-reference.js): sizes around the vector widths and key tiles (16-query groups, tiles
// of up to 96 keys), boolean, float and causal masks, the backward over the same sizes and masks with GQA, and
// the NaN rules (a key a query may not see never reaches it, whatever K or V hold there; a fully masked row
// gives 0; a NaN key a query sees makes its row NaN, however far a later key moves the max; NaN in query row i
// reaches only output row i). Dimension legend: B·H folded into one leading dim BH, L queries, S keys, E
// query/key dim, Ev value dim.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { attentionReference as reference, attentionReferenceGrad as referenceGrad } from '../../web/src/shared/attention-reference.js';
import { farFrom, randomTensor as tensor, uniform } from './test-data.mjs';
import { BUILDS, GRAD_TOLERANCE } from './golden.mjs';

const close = (got, want, label) => assert.equal(farFrom(got, want, label), '');
const closeGrad = (got, want, label) => assert.equal(farFrom(got, want, label, GRAD_TOLERANCE), '');

// (B, Hkv·G, n, D) with each key/value head repeated for the G query heads that share it, as (B·Hkv·G, n, D).
function repeatHeads(t, G) {
  const [B, H, n, D] = t.shape, data = new Float32Array(B * H * G * n * D);
  for (let p = 0; p < B * H; p++) for (let g = 0; g < G; g++) data.set(t.data.subarray(p * n * D, (p + 1) * n * D), (p * G + g) * n * D);
  return { data, shape: [B * H * G, n, D] };
}
// The reverse for a gradient: (B·Hkv·G, n, D) summed over each group's G heads into (B·Hkv, n, D).
function sumHeads(g, G, n, D) {
  const out = new Float64Array(g.length / G);
  for (let x = 0; x < g.length; x++) out[Math.floor(x / (G * n * D)) * n * D + (x % (n * D))] += g[x];
  return out;
}

// L, S, E, Ev around the 4-lane vectors, the 16-query groups and the 96-key tiles.
const SIZES = [[1, 1, 1, 1], [3, 5, 7, 2], [17, 97, 3, 5], [16, 96, 4, 4], [33, 193, 65, 67], [65, 290, 64, 64]];

for (const { options: buildOptions, label } of BUILDS) {
  describe(`kernels against a float64 reference on the ${label} build`, async () => {
    const xa = await createXattn(buildOptions);

    test('runs the register blocking that suits this CPU\'s vector registers', () => {
      // Blocks of 16 accumulators where the engine's code has 32 vector registers (arm64), of 8 on x86's 16
      // (src/kernels/blocking.cpp); the name says which, and that the kernels are the build's.
      const base = !xa.simd ? 'scalar' : xa.relaxedSimd ? 'wasm-relaxed-simd' : 'wasm-simd128';
      const blocks = xa.simd && ['arm64', 'riscv64'].includes(process.arch) ? '/16' : '';
      assert.equal(xa.kernels, base + blocks);
    });

    test('sizes around vector widths and tile edges, with and without weights', () => {
      for (const [L, S, E, Ev] of SIZES) {
        const q = tensor([2, L, E], L), k = tensor([2, S, E], S), v = tensor([2, S, Ev], Ev);
        const want = reference(q, k, v, { scale: 1 / Math.sqrt(E) });
        const r = xa.scaledDotProductAttention(q, k, v, { needWeights: true });
        close(r.output.data, want.output.data, `${L}x${S}x${E}x${Ev} output`);
        close(r.weights.data, want.weights.data, `${L}x${S}x${E}x${Ev} weights`);
        close(xa.scaledDotProductAttention(q, k, v).output.data, want.output.data, `${L}x${S}x${E}x${Ev} streaming`);
      }
    });

    test('boolean and float masks (rows with every key masked give 0), causal in both alignments', () => {
      const [L, S, E, Ev] = [37, 150, 24, 20];
      const q = tensor([2, L, E], 1), k = tensor([2, S, E], 2), v = tensor([2, S, Ev], 3);
      const scale = 1 / Math.sqrt(E), next = uniform(4);
      const bools = Uint8Array.from({ length: L * S }, (_, x) => (Math.floor(x / S) % 7 === 3 ? 0 : next() < 0.6 ? 1 : 0));
      const floats = Float32Array.from({ length: L * S }, () => (next() < 0.2 ? -Infinity : 3 * next() - 1.5));
      const cases = [
        [{ attnMask: { data: bools, shape: [L, S] } }, { maskValue: (b, i, j) => (bools[i * S + j] === 1 ? 0 : -Infinity) }],
        [{ attnMask: { data: floats, shape: [L, S] } }, { maskValue: (b, i, j) => floats[i * S + j] }],
        [{ isCausal: true }, { maskValue: (b, i, j) => (j <= i ? 0 : -Infinity) }],
        [{ isCausal: true, causalAlignment: 'bottom-right' }, { maskValue: (b, i, j) => (j <= i + S - L ? 0 : -Infinity) }],
      ];
      for (const [options, rule] of cases) {
        const want = reference(q, k, v, { ...rule, scale });
        for (const needWeights of [false, true]) {
          const r = xa.scaledDotProductAttention(q, k, v, { ...options, needWeights });
          close(r.output.data, want.output.data, `${JSON.stringify(options).slice(0, 40)} output`);
          if (needWeights) close(r.weights.data, want.weights.data, 'weights');
        }
      }
      // Bottom-right with L > S: the first L - S rows see no key.
      const qq = tensor([1, 60, 8], 5), kk = tensor([1, 20, 8], 6), vv = tensor([1, 20, 8], 7);
      const r = xa.scaledDotProductAttention(qq, kk, vv, { isCausal: true, causalAlignment: 'bottom-right' });
      close(r.output.data, reference(qq, kk, vv, { maskValue: (b, i, j) => (j <= i - 40 ? 0 : -Infinity), scale: 1 / Math.sqrt(8) }).output.data, 'L > S');
      assert.ok(r.output.data.subarray(0, 40 * 8).every((x) => x === 0));
    });

    test('the backward around vector widths, tile edges and key chunks against a float64 gradient', () => {
      // The sizes above, and one problem long enough (S > 512) for its keys to be cut into chunks whose dQ
      // partials are added in a fixed order.
      for (const [BH, L, S, E, Ev] of [...SIZES.map((s) => [2, ...s]), [1, 3, 1300, 16, 16]]) {
        const q = tensor([BH, L, E], L + 1), k = tensor([BH, S, E], S + 1), v = tensor([BH, S, Ev], Ev + 1);
        const dO = tensor([BH, L, Ev], 7 * L + 1);
        const want = referenceGrad(q, k, v, dO, { scale: 1 / Math.sqrt(E) });
        const r = xa.scaledDotProductAttentionGrad(q, k, v, dO);
        const at = `${BH}×${L}×${S}, E ${E}, Ev ${Ev}`;
        closeGrad(r.output.data, want.output.data, `${at} output`);
        closeGrad(r.gradQuery.data, want.gradQuery.data, `${at} dQ`);
        closeGrad(r.gradKey.data, want.gradKey.data, `${at} dK`);
        closeGrad(r.gradValue.data, want.gradValue.data, `${at} dV`);
      }
    });

    test('the backward with GQA under masks of every broadcast and both causal alignments', () => {
      // Hq = 4 query heads on Hkv = 2 key/value heads: dK and dV of a head sum its two query heads' parts.
      const [B, Hq, Hkv, L, S, E, Ev] = [2, 4, 2, 37, 150, 24, 20], G = Hq / Hkv;
      const q = tensor([B, Hq, L, E], 41), k = tensor([B, Hkv, S, E], 42), v = tensor([B, Hkv, S, Ev], 43);
      const dO = tensor([B, Hq, L, Ev], 44), next = uniform(45), scale = 1 / Math.sqrt(E);
      const bools = Uint8Array.from({ length: L * S }, (_, x) => (Math.floor(x / S) % 7 === 3 ? 0 : next() < 0.6 ? 1 : 0));
      const floats = Float32Array.from({ length: L * S }, () => (next() < 0.2 ? -Infinity : 3 * next() - 1.5));
      const padding = Uint8Array.from({ length: B * S }, (_, x) => (x % S < S - 30 * (Math.floor(x / S) + 1) ? 1 : 0));
      const cases = [
        [{ attnMask: { data: bools, shape: [L, S] } }, { maskValue: (b, i, j) => (bools[i * S + j] === 1 ? 0 : -Infinity) }],
        [{ attnMask: { data: floats, shape: [L, S] } }, { maskValue: (b, i, j) => floats[i * S + j] }],
        [{ attnMask: { data: padding, shape: [B, 1, 1, S] } }, { maskValue: (b, i, j) => (padding[Math.floor(b / Hq) * S + j] === 1 ? 0 : -Infinity) }],
        [{ isCausal: true }, { maskValue: (b, i, j) => (j <= i ? 0 : -Infinity) }],
        [{ isCausal: true, causalAlignment: 'bottom-right' }, { maskValue: (b, i, j) => (j <= i + S - L ? 0 : -Infinity) }],
      ];
      const flat = (t) => ({ data: t.data, shape: [B * Hq, L, t.shape[3]] });
      for (const [options, rule] of cases) {
        const want = referenceGrad(flat(q), repeatHeads(k, G), repeatHeads(v, G), flat(dO), { ...rule, scale });
        const r = xa.scaledDotProductAttentionGrad(q, k, v, dO, { ...options, enableGqa: true });
        const at = JSON.stringify({ ...options, attnMask: options.attnMask?.shape });
        closeGrad(r.output.data, want.output.data, `${at} output`);
        closeGrad(r.gradQuery.data, want.gradQuery.data, `${at} dQ`);
        closeGrad(r.gradKey.data, sumHeads(want.gradKey.data, G, S, E), `${at} dK`);
        closeGrad(r.gradValue.data, sumHeads(want.gradValue.data, G, S, Ev), `${at} dV`);
      }
    });

    test('a key a query may not see never reaches it: NaN keys, inf and NaN values behind a mask', () => {
      const [L, S, E, Ev] = [20, 130, 16, 12];
      const q = tensor([1, L, E], 8), k = tensor([1, S, E], 9), v = tensor([1, S, Ev], 10);
      const hidden = new Set([5, 64, 97, 129]);
      for (const j of hidden) {
        k.data.fill(NaN, j * E, (j + 1) * E);
        v.data.fill(j % 2 ? Infinity : NaN, j * Ev, (j + 1) * Ev);
      }
      const bools = Uint8Array.from({ length: L * S }, (_, x) => (hidden.has(x % S) ? 0 : 1));
      const want = reference(q, k, v, { maskValue: (b, i, j) => (hidden.has(j) ? -Infinity : 0), scale: 1 / Math.sqrt(E) });
      for (const needWeights of [false, true]) {
        const r = xa.scaledDotProductAttention(q, k, v, { attnMask: { data: bools, shape: [L, S] }, needWeights });
        close(r.output.data, want.output.data, `hidden keys, needWeights ${needWeights}`);
      }
    });

    test('random calls with NaN and ±inf keys and a far key: NaN exactly where the reference has it', () => {
      // Queries are positive; each problem's keys hold, at random positions, a NaN, a +inf and a -inf element,
      // and a key row of 200s whose score is at least 95 above every other (so the keys before it are rescaled
      // by exp(-95) = 0 in float32). Values are finite, so a row is NaN exactly when a visible key scores NaN
      // (or +inf, with exp(inf - inf)), whichever key tiles hold the NaN and the far key; other rows take the far
      // key's value if they see it.
      const next = uniform(31);
      const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
      for (let call = 0; call < 60; call++) {
        const [BH, L, S, E, Ev] = [int(1, 3), int(1, 40), int(2, 400), int(1, 17), int(1, 9)];
        const q = tensor([BH, L, E], 100 + call), k = tensor([BH, S, E], 200 + call), v = tensor([BH, S, Ev], 300 + call);
        q.data.forEach((x, i) => { q.data[i] = 0.75 + x / 4; });  // in [0.5, 1]
        for (let b = 0; b < BH; b++) {
          for (const special of [NaN, Infinity, -Infinity]) if (next() < 0.5) k.data[(b * S + int(0, S - 1)) * E + int(0, E - 1)] = special;
          const far = b * S + int(0, S - 1);
          if (next() < 0.8) k.data.fill(200, far * E, far * E + E);
        }
        const causal = next() < 0.5;
        const want = reference(q, k, v, { maskValue: causal ? (b, i, j) => (j <= i ? 0 : -Infinity) : null, scale: 1 / Math.sqrt(E) });
        for (const needWeights of [false, true]) {
          const out = xa.scaledDotProductAttention(q, k, v, { isCausal: causal, needWeights }).output.data;
          close(out, want.output.data, `call ${call} (${BH}×${L}×${S}, E ${E}, causal ${causal}, needWeights ${needWeights})`);
        }
      }
    });

    test('NaN in query row i reaches only output row i', () => {
      const [L, S, E, Ev] = [40, 100, 12, 8];
      const q = tensor([1, L, E], 11), k = tensor([1, S, E], 12), v = tensor([1, S, Ev], 13);
      q.data[17 * E + 3] = NaN;
      const out = xa.scaledDotProductAttention(q, k, v).output.data;
      for (let i = 0; i < L; i++) {
        const row = out.subarray(i * Ev, (i + 1) * Ev);
        assert.equal(row.every(Number.isNaN), i === 17, `row ${i}`);
        if (i !== 17) assert.ok(row.every(Number.isFinite), `row ${i}`);
      }
    });
  });
}
