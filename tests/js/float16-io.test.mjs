// float16 I/O through the JS API: tensors of IEEE halves (a Uint16Array of their bits, or a Float16Array where the
// runtime has one) go in, are computed in float32, and come back as halves of the inputs' class. Each result is
// the float32 call's on the widened inputs, rounded once to the nearest half, ties to even, bit for bit: past
// 65504 it is ±inf, below 2^-14 a subnormal half, a NaN the quiet NaN of its sign (src/half_io.cpp, src/rotary.cpp;
// tests/test_float16_io.cpp checks the same natively). Rotary's features past rotaryDim pass through as they came.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { BUILDS } from './golden.mjs';
import {
  float32BitsOfHalf, halfBits, halfKinds, halfOfFloat32Bits, randomHalves, roundingMismatch, widened,
} from './halves.mjs';
import { float16ArrayProblems } from './float16-arrays.mjs';
import { sameBits } from './test-data.mjs';

const count = (shape) => shape.reduce((a, b) => a * b, 1);
const halves = (shape, seed, options) => ({ data: randomHalves(count(shape), seed, options), shape });
const float32Of = (bits) => new Float32Array(new Uint32Array([bits]).buffer)[0];
const bitsOf = (x) => new Uint32Array(new Float32Array([x]).buffer)[0];

// Asserts that every field of `got` (a float16 call's result) is of class `Half` and is the same field of `want`
// (the float32 call's) rounded once.
function assertRounded(got, want, fields, Half, label) {
  for (const field of fields) {
    assert.ok(got[field].data instanceof Half, `${label} ${field}: ${got[field].data?.constructor?.name}`);
    assert.deepEqual(got[field].shape, want[field].shape, `${label} ${field} shape`);
    assert.equal(roundingMismatch(got[field].data, want[field].data, `${label} ${field}`), '');
  }
}

const kindsOf = (result, fields) => {
  const all = { subnormal: 0, inf: 0, nan: 0 };
  for (const f of fields) for (const [k, n] of Object.entries(halfKinds(result[f].data))) all[k] += n;
  return all;
};

test("the checks' own rounding: every half round-trips, ties go to even, 65520 is inf, 2^-25 is 0", () => {
  for (let h = 0; h < 0x10000; h++) {
    const isNaN = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
    assert.equal(halfOfFloat32Bits(float32BitsOfHalf(h)), isNaN ? (h & 0x8000) | 0x7e00 : h, `half 0x${h.toString(16)}`);
  }
  const cases = [
    [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02], [1 + 2 ** -11 + 2 ** -23, 0x3c01],  // ties to even, and past one
    [65504, 0x7bff], [65519.99609375, 0x7bff], [65520, 0x7c00], [-1e30, 0xfc00], [Infinity, 0x7c00],
    [2 ** -14, 0x0400], [2 ** -14 - 2 ** -25, 0x0400], [2 ** -24, 0x0001], [2 ** -25, 0x0000],
    [3 * 2 ** -25, 0x0002], [2 ** -25 + 2 ** -40, 0x0001], [-(2 ** -26), 0x8000], [-0, 0x8000], [1e-45, 0x0000],
  ];
  for (const [x, h] of cases) assert.equal(halfOfFloat32Bits(bitsOf(x)), h, `${x}`);
  assert.equal(halfOfFloat32Bits(0xffc00001), 0xfe00, 'a negative NaN stays negative');
  assert.equal(float32BitsOfHalf(0x7d01), 0x7fa02000, 'a NaN keeps its payload when widened');
  assert.equal(float32Of(float32BitsOfHalf(0x0001)), 2 ** -24);
});

for (const { options: buildOptions, label } of BUILDS) {
  describe(`float16 I/O on the ${label} build: the float32 call's results, rounded once`, async () => {
    const xa = await createXattn(buildOptions);

    test('scaledDotProductAttentionGrad: output, the three gradients and the weights, under every rule', () => {
      const q = halves([2, 4, 7, 8], 1), k = halves([2, 2, 11, 8], 2), v = halves([2, 2, 11, 6], 3);
      const o = {
        enableGqa: true, softcap: 2, isCausal: true, causalAlignment: 'bottom-right', window: { left: 3 },
        alibiSlopes: [0.5, 0.25, 0.125, 0.0625], keyLengths: [11, 6], dropoutP: 0.2, seed: 5, needWeights: true,
        attnMask: { data: Float32Array.from({ length: 7 * 11 }, (_, i) => Math.cos(i)), shape: [7, 11] },
      };
      const fields = ['output', 'gradQuery', 'gradKey', 'gradValue', 'weights'];
      // gradOutput of ordinary size, then one small enough that many gradients are subnormal halves.
      for (const [scale, name] of [[1, 'ordinary'], [2 ** -12, 'small']]) {
        const dO = halves([2, 4, 7, 6], 4, { scale, subnormalEvery: 5 });
        const got = xa.scaledDotProductAttentionGrad(q, k, v, dO, o);
        const want = xa.scaledDotProductAttentionGrad(widened(q), widened(k), widened(v), widened(dO), o);
        assertRounded(got, want, fields, Uint16Array, name);
        if (scale < 1) assert.ok(kindsOf(got, ['gradQuery', 'gradKey', 'gradValue']).subnormal > 20, JSON.stringify(kindsOf(got, fields)));
      }
      // Large values: gradients past 65504 become ±inf; an infinite value (seen by element 0's rows) makes NaN.
      const big = halves([2, 4, 7, 6], 6, { scale: 20000 });
      const vInf = { data: v.data.slice(), shape: v.shape };
      vInf.data[3 * 6 + 1] = 0x7c00;  // element 0, head 0, key 3: +inf
      const got = xa.scaledDotProductAttentionGrad(q, k, vInf, big, o);
      const want = xa.scaledDotProductAttentionGrad(widened(q), widened(k), widened(vInf), widened(big), o);
      assertRounded(got, want, fields, Uint16Array, 'large');
      const kinds = kindsOf(got, fields);
      assert.ok(kinds.inf > 0 && kinds.nan > 0, JSON.stringify(kinds));
      // Element 1 never sees the infinite value: its gradients are finite.
      assert.equal(halfKinds(got.gradQuery.data.subarray(4 * 7 * 8)).nan, 0);
    });

    test('scaledDotProductAttention: output, weights and scores; scores past 65504 are ±inf, tiny weights subnormal halves', () => {
      // Large inputs at scale 1: scores past the largest half. Moderate ones: weights down to e^-17, below 2^-14.
      const large = [halves([2, 3, 5, 8], 7, { scale: 120 }), halves([2, 3, 9, 8], 8, { scale: 120 })];
      const moderate = [halves([2, 3, 5, 8], 7, { scale: 2.5 }), halves([2, 3, 9, 8], 8, { scale: 2.5 })];
      const v = halves([2, 3, 9, 4], 9, { subnormalEvery: 3 });
      for (const returnScores of ['scaled', 'softcapped', 'biased']) {
        for (const [[q, k], scale, name] of [[large, 1, 'large'], [moderate, undefined, 'moderate']]) {
          const o = { returnScores, needWeights: true, window: { left: 4, right: 1 }, isCausal: true, attnMask: {
            data: Float32Array.from({ length: 9 }, (_, j) => -0.5 * j), shape: [9] } };
          if (scale !== undefined) o.scale = scale;
          if (returnScores === 'softcapped') o.softcap = 50;
          const got = xa.scaledDotProductAttention(q, k, v, o);
          const want = xa.scaledDotProductAttention(widened(q), widened(k), widened(v), o);
          assertRounded(got, want, ['output', 'weights', 'scores'], Uint16Array, `${returnScores} ${name}`);
          if (name === 'large' && returnScores !== 'softcapped') {
            assert.ok(halfKinds(got.scores.data).inf > 10, `${returnScores}: ${JSON.stringify(halfKinds(got.scores.data))}`);
          }
          if (name === 'moderate') {
            assert.ok(halfKinds(got.weights.data).subnormal > 0, `${returnScores}: ${JSON.stringify(halfKinds(got.weights.data))}`);
          }
        }
      }
    });

    test('KvCache.append and attend: halves in, the float32 cache and attend on the widened values, rounded', () => {
      for (const dtype of ['float32', 'float16']) {
        const config = {
          batch: 2, kvHeads: 2, headDim: 8, valueDim: 6, capacity: 9, rolling: true, dtype,
          rotary: { base: 500, rotaryDim: 6, interleaved: true },
        };
        const fromHalves = xa.createKvCache(config), fromFloats = xa.createKvCache(config);
        try {
          // Element 1's first key at position 1 holds a pair of 60000s: turned by 1 radian its second feature is
          // 82,800, +inf in a float16 cache.
          const first = halves([2, 2, 5, 8], 10, { subnormalEvery: 7 });
          first.data[(2 * 5 + 1) * 8] = first.data[(2 * 5 + 1) * 8 + 1] = 0x7b53;  // 60000
          const steps = [
            [first, halves([2, 2, 5, 6], 11), { counts: [5, 3] }],
            [halves([2, 2, 4, 8], 12), halves([2, 2, 4, 6], 13)],
            [[8, 7]],  // truncate each element
            [halves([2, 2, 3, 8], 14), halves([2, 2, 3, 6], 15), { counts: [3, 1] }],  // element 0 rolls
          ];
          for (const step of steps) {
            if (step.length === 1) {
              fromHalves.truncate(step[0]);
              fromFloats.truncate(step[0]);
            } else {
              const [key, value, options] = step;
              fromHalves.append(key, value, options);
              fromFloats.append(widened(key), widened(value), options);
            }
            assert.deepEqual(fromHalves.lengths, fromFloats.lengths);
            assert.deepEqual(fromHalves.positions, fromFloats.positions);
            assert.ok(sameBits(fromHalves.keys().data, fromFloats.keys().data), `${dtype}: keys`);
            assert.ok(sameBits(fromHalves.values().data, fromFloats.values().data), `${dtype}: values`);
          }
          assert.deepEqual([...fromHalves.lengths], [9, 8]);
          assert.deepEqual([...fromHalves.positions], [11, 8]);
          const heldInf = fromHalves.keys().data.subarray(2 * 9 * 8).some((x) => x === Infinity);
          assert.equal(heldInf, dtype === 'float16', `${dtype}: the turned 60000 pair is held as +inf only in float16 storage`);

          // No soft-cap here: it would cap the infinite scores of element 1's rows.
          const rules = { isCausal: true, window: { left: 6 }, alibiSlopes: [0.3, 0.2, 0.1, 0.05], scale: 0.4 };
          // A prefill-like call with a mask and the weights (the tiled kernels), then a decoding step (L = 1,
          // no weights: the decoding kernel).
          const mask = { data: Uint8Array.from({ length: 2 * 9 }, (_, i) => (i % 4 === 2 ? 0 : 1)), shape: [2, 9] };
          for (const [q, o, fields] of [
            [halves([2, 4, 2, 8], 16, { subnormalEvery: 9 }), { ...rules, attnMask: mask, needWeights: true }, ['output', 'weights']],
            [halves([2, 4, 1, 8], 17), rules, ['output']],
          ]) {
            // Query head 0 of element 1 reads that key with a positive feature: a score of +inf in float16 storage.
            for (let l = 0; l < q.shape[2]; l++) q.data[(4 * q.shape[2] + l) * 8 + 1] = 0x3c00;
            const got = fromHalves.attend(q, o);
            assert.equal(got.weights, o.needWeights ? got.weights : undefined);
            assertRounded(got, fromFloats.attend(widened(q), o), fields, Uint16Array, `${dtype} attend L = ${q.shape[2]}`);
            assertRounded(got, fromHalves.attend(widened(q), o), fields, Uint16Array, `${dtype} attend L = ${q.shape[2]}, float32 query`);
            const out = halfBits(got.output.data);
            // Element 0's rows see finite keys only; element 1's see the 60000 pair's key (+inf when stored as a half).
            assert.equal(halfKinds(out.subarray(0, out.length / 2)).nan, 0, `${dtype}: element 0`);
            assert.equal(halfKinds(out.subarray(out.length / 2)).nan > 0, dtype === 'float16', `${dtype}: element 1`);
          }
        } finally {
          fromHalves.dispose();
          fromFloats.dispose();
        }
      }
    });

    test('applyRotaryEmbedding and its gradient: turned pairs rounded (overflow to inf, subnormals, quiet NaN); the rest pass through bit for bit', () => {
      const shape = [2, 3, 5, 10], D = 10, rotaryDim = 6;
      const x = halves(shape, 18, { subnormalEvery: 4 });
      const set = (row, features, h) => { for (const f of features) x.data[row * D + f] = h; };
      set(3, [0, 1, 3], 0x7bff);  // 65504s, paired in both layouts: at 10 radians one of each pair turns past 65504
      set(4, [0, 1, 3], 0x0155); set(4, [2], 0x8203);  // subnormals turned into subnormals
      set(5, [1], 0x7d01); set(5, [2], 0xfd01);  // NaNs with payloads in turned pairs: quiet NaNs
      set(6, [0], 0x7c00);  // inf in a turned pair
      for (const [f, h] of [[6, 0x7d01], [7, 0xfc00], [8, 0x8000], [9, 0x0001]]) set(7, [f], h);  // passed through
      const positions = Int32Array.from({ length: 10 }, (_, i) => 3 * i + 1);  // row 3 (element 0, l = 3) at 10
      const row = (a, r) => a.subarray(r * D, r * D + rotaryDim);
      for (const interleaved of [false, true]) {
        const o = { positions, base: 100, rotaryDim, interleaved };
        for (const fn of ['applyRotaryEmbedding', 'applyRotaryEmbeddingGrad']) {
          const label = `${fn}${interleaved ? ' interleaved' : ''}`;
          const got = xa[fn](x, o);
          const want = xa[fn](widened(x), o);
          assert.ok(got.data instanceof Uint16Array, label);
          assert.deepEqual(got.shape, shape);
          const g = halfBits(got.data), w = new Uint32Array(want.data.buffer);
          for (let i = 0; i < g.length; i++) {
            // Turned: the float32 result's bits (a NaN's sign too) rounded; past rotaryDim: the input's bits.
            const expected = i % D < rotaryDim ? halfOfFloat32Bits(w[i]) : x.data[i];
            assert.equal(g[i], expected, `${label} [${i}] (${i % D < rotaryDim ? 'turned' : 'passed through'})`);
          }
          assert.ok(halfKinds(row(g, 3)).inf > 0, `${label}: the 65504s overflow`);
          assert.ok(halfKinds(row(g, 4)).subnormal > 0, `${label}: subnormal halves turned`);
          assert.ok(halfKinds(row(g, 5)).nan >= 2 && halfKinds(row(g, 6)).nan + halfKinds(row(g, 6)).inf >= 2, label);
          for (const h of row(g, 5)) if ((h & 0x7c00) === 0x7c00) assert.equal(h & 0x7fff, 0x7e00, `${label}: a turned NaN is quiet`);
          assert.deepEqual([...g.subarray(7 * D + 6, 8 * D)], [0x7d01, 0xfc00, 0x8000, 0x0001], `${label}: passed through`);
        }
      }
    });
  });
}

describe('float16 I/O: one class of halves per call', async () => {
  const xa = await createXattn();
  const refused = (call, message) => assert.throws(call, (e) => {
    assert.ok(e instanceof TypeError, `${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.message, message);
    return true;
  });

  test('a Float32Array beside halves is refused by name, and a refused append appends nothing', () => {
    const h = halves([1, 2, 3, 4], 20);
    const f = widened(h);
    refused(() => xa.scaledDotProductAttentionGrad(h, h, h, f), 'scaledDotProductAttentionGrad: gradOutput.data must be a ' +
      "Uint16Array like query's (float16 calls take every tensor as halves), got Float32Array");
    const cache = xa.createKvCache({ kvHeads: 2, headDim: 4, capacity: 8 });
    refused(() => cache.append(h, f), 'KvCache.append: value.data must be a Uint16Array like key\'s (float16 calls take every ' +
      'tensor as halves), got Float32Array');
    assert.deepEqual([...cache.lengths], [0]);
    cache.append(h, h);
    refused(() => cache.attend(h, { out: new Float32Array(24) }),
      'KvCache.attend: out must be a Float32Array, and float16 calls return their own arrays');
    cache.dispose();
  });

  // Node 20 has no Float16Array; the package test runs the same checks in Chromium (tests/package/browser-suites.js).
  test('Float16Array in, Float16Array out: the same bits as the Uint16Array call', {
    skip: typeof Float16Array !== 'function' && 'this runtime has no Float16Array',
  }, () => {
    assert.deepEqual(float16ArrayProblems(xa), []);
  });
});
