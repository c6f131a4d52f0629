// The float64 reference (web/src/shared/attention-reference.js: the tests' oracle, the benchmark's check and the
// lab's plain-JS speed row) against hand-worked cases and against the package itself through its public API.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { attentionGeometry, attentionReference as plainAttention, causalAllows, maskLayout, scoreMatrix } from '../../web/src/shared/attention-reference.js';
import { randomValues } from '../../web/src/shared/prng.js';
import { sdpaMaskOptions } from '../../web/src/masks/masks.js';

const tensor = (shape, seed) => ({ data: randomValues(shape.reduce((a, b) => a * b, 1), { seed }), shape });
const close = (a, b, tol = 2e-5) => {
  assert.equal(a.length, b.length);
  for (let k = 0; k < a.length; k++) assert.ok(Math.abs(a[k] - b[k]) <= tol * (1 + Math.abs(b[k])), `index ${k}: ${a[k]} vs ${b[k]}`);
};

test('a worked example: one query, two keys', () => {
  // q·k = (2, 0); scaled by 1/√2 → (√2, 0); softmax → (e^√2, 1) / (e^√2 + 1).
  const q = { data: Float32Array.of(1, 1), shape: [1, 1, 2] };
  const k = { data: Float32Array.of(1, 1, 1, -1), shape: [1, 2, 2] };
  const v = { data: Float32Array.of(10, 0), shape: [1, 2, 1] };
  const { output, weights } = plainAttention(q, k, v);
  const w0 = Math.exp(Math.SQRT2) / (Math.exp(Math.SQRT2) + 1);
  close(weights.data, [w0, 1 - w0], 1e-6);
  close(output.data, [10 * w0], 1e-6);
  assert.deepEqual(weights.shape, [1, 1, 2]);
});

test('zero queries give uniform weights and the mean of the values', () => {
  const q = { data: new Float32Array(2 * 3 * 4), shape: [2, 3, 4] };
  const k = tensor([2, 5, 4], 1);
  const v = tensor([2, 5, 2], 2);
  const { output, weights } = plainAttention(q, k, v);
  for (const w of weights.data) assert.ok(Math.abs(w - 0.2) < 1e-7);
  const mean = (b, c) => [0, 1, 2, 3, 4].reduce((s, j) => s + v.data[(b * 5 + j) * 2 + c], 0) / 5;
  assert.ok(Math.abs(output.data[0] - mean(0, 0)) < 1e-6);
  assert.ok(Math.abs(output.data[(1 * 3 + 2) * 2 + 1] - mean(1, 1)) < 1e-6);
});

test('causal alignments: top-left sees j ≤ i, bottom-right sees j ≤ i + S − L', () => {
  assert.equal(causalAllows(0, 0, 3, 5), true);
  assert.equal(causalAllows(0, 1, 3, 5), false);
  assert.equal(causalAllows(0, 2, 3, 5, 'bottom-right'), true);
  assert.equal(causalAllows(0, 3, 3, 5, 'bottom-right'), false);
  const q = tensor([1, 3, 4], 3);
  const k = tensor([1, 5, 4], 4);
  const v = tensor([1, 5, 4], 5);
  const { weights } = plainAttention(q, k, v, { isCausal: true, causalAlignment: 'bottom-right' });
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 5; j++) assert.equal(weights.data[i * 5 + j] === 0, j > i + 2, `(${i}, ${j})`);
  }
});

test('a fully masked row gives zero weights and a zero output, never NaN', () => {
  const q = tensor([1, 2, 3], 6);
  const k = tensor([1, 4, 3], 7);
  const v = tensor([1, 4, 2], 8);
  const mask = { data: Uint8Array.of(0, 0, 0, 0, 1, 0, 1, 0), shape: [2, 4] };
  const { output, weights } = plainAttention(q, k, v, { attnMask: mask });
  assert.deepEqual([...weights.data.subarray(0, 4)], [0, 0, 0, 0]);
  assert.deepEqual([...output.data.subarray(0, 2)], [0, 0]);
  assert.equal(weights.data[5], 0);
  assert.ok(Math.abs(weights.data[4] + weights.data[6] - 1) < 1e-6);
});

test('mask broadcasting: a (B, 1, S) mask equals its expansion to (B, L, S)', () => {
  const layout = maskLayout([2, 1, 5], [2], 3, 5);
  assert.equal(layout.rowStride, 0);
  assert.equal(layout.colStride, 1);
  assert.equal(layout.base(1), 5);
  const q = tensor([2, 3, 4], 9);
  const k = tensor([2, 5, 4], 10);
  const v = tensor([2, 5, 3], 11);
  const small = { data: Uint8Array.of(1, 1, 0, 1, 0, 1, 1, 1, 1, 0), shape: [2, 1, 5] };
  const full = { data: new Uint8Array(2 * 3 * 5), shape: [2, 3, 5] };
  for (let b = 0; b < 2; b++) for (let i = 0; i < 3; i++) for (let j = 0; j < 5; j++) full.data[(b * 3 + i) * 5 + j] = small.data[b * 5 + j];
  assert.deepEqual(plainAttention(q, k, v, { attnMask: small }), plainAttention(q, k, v, { attnMask: full }));
});

test('GQA: query head h reads key/value head floor(h / (Hq / Hkv))', () => {
  const q = tensor([1, 4, 3, 2], 12);
  const k = tensor([1, 2, 5, 2], 13);
  const v = tensor([1, 2, 5, 2], 14);
  const repeat = (t) => {
    const [B, H, S, E] = t.shape;
    const out = new Float32Array(B * 2 * H * S * E);
    for (let h = 0; h < 2 * H; h++) out.set(t.data.subarray((h >> 1) * S * E, ((h >> 1) + 1) * S * E), h * S * E);
    return { data: out, shape: [B, 2 * H, S, E] };
  };
  const gqa = plainAttention(q, k, v, { enableGqa: true });
  const full = plainAttention(q, repeat(k), repeat(v));
  assert.deepEqual(gqa, full);
  assert.throws(() => plainAttention(q, k, v), /query has 4 heads but key has 2/);
});

test('step 1 alone: raw scores are Q Kᵀ without scale or mask', () => {
  const q = tensor([2, 3, 4], 15);
  const k = tensor([2, 5, 4], 16);
  const v = tensor([2, 5, 1], 17);
  const s = scoreMatrix(q, k, attentionGeometry(q, k, v), 1);
  let dot = 0;
  for (let e = 0; e < 4; e++) dot += q.data[(3 + 2) * 4 + e] * k.data[(5 + 4) * 4 + e];
  assert.ok(Math.abs(s[2 * 5 + 4] - dot) < 1e-6);
});

test('without weights the output is the same, row by row', () => {
  const q = tensor([2, 3, 4], 18);
  const k = tensor([2, 5, 4], 19);
  const v = tensor([2, 5, 3], 20);
  const a = plainAttention(q, k, v, { isCausal: true });
  const b = plainAttention(q, k, v, { isCausal: true, needWeights: false });
  assert.equal(b.weights, null);
  assert.deepEqual(b.output, a.output);
});

test('a key hidden by the mask never reaches the query, whatever it holds; a NaN key it sees makes its row NaN', () => {
  const q = tensor([1, 2, 3], 23);
  const k = tensor([1, 3, 3], 24);
  const v = tensor([1, 3, 2], 25);
  k.data[2 * 3] = NaN; // key 2
  const hidden = plainAttention(q, k, v, { attnMask: { data: Uint8Array.of(1, 1, 0, 1, 1, 1), shape: [2, 3] } });
  assert.ok(hidden.output.data.subarray(0, 2).every(Number.isFinite), 'query 0 does not see key 2');
  assert.ok(hidden.output.data.subarray(2, 4).every(Number.isNaN), 'query 1 sees key 2');
});

// The page shows plain JS and the package side by side; they must compute the same attention.
test('plain JS matches the package on both builds, with the page\'s masks', async () => {
  const builds = [await createXattn({ simd: true }), await createXattn({ simd: false })];
  const cases = [
    { dims: { B: 4, L: 10, S: 10, E: 64, Ev: 64, useHeads: false }, mask: { causal: false, padding: null, custom: null } },
    { dims: { B: 2, L: 6, S: 9, E: 16, Ev: 8, useHeads: false }, mask: { causal: true, alignment: 'bottom-right', padding: null, custom: null } },
    { dims: { B: 2, H: 4, Hkv: 2, L: 7, S: 7, E: 8, Ev: 8, useHeads: true }, mask: { causal: true, alignment: 'top-left', padding: [7, 0], custom: null } },
  ];
  for (const { dims, mask } of cases) {
    const lead = dims.useHeads ? [dims.B, dims.H] : [dims.B];
    const kvLead = dims.useHeads ? [dims.B, dims.Hkv] : [dims.B];
    const q = tensor([...lead, dims.L, dims.E], 20);
    const k = tensor([...kvLead, dims.S, dims.E], 21);
    const v = tensor([...kvLead, dims.S, dims.Ev], 22);
    const { options } = sdpaMaskOptions(dims, mask);
    const opts = { ...options, enableGqa: Boolean(dims.useHeads && dims.Hkv !== dims.H) };
    const mine = plainAttention(q, k, v, opts);
    for (const lib of builds) {
      const theirs = lib.scaledDotProductAttention(q, k, v, { ...opts, needWeights: true });
      assert.deepEqual(theirs.weights.shape, mine.weights.shape);
      close(mine.weights.data, theirs.weights.data);
      close(mine.output.data, theirs.output.data);
    }
  }
});
