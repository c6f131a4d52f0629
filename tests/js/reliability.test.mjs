// Reliability through the JS API: the documented numerics, and inputs that alias, share or move (the soak and
// running out of memory: tests/soak/reliability.test.mjs).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { loadCases, mismatch, sdpaOptions, tensor } from './golden.mjs';

const fixtures = loadCases('sdpa.txt');
const fixture = (name) => fixtures.find((c) => c.name === name);
const t = (shape, fill = 0) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)).fill(fill), shape });

function checkFixture(xa, name) {
  const c = fixture(name);
  const r = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value), sdpaOptions(c));
  assert.equal(mismatch(r.output, c.tensors.output), '', name);
  if (c.tensors.weights) assert.equal(mismatch(r.weights, c.tensors.weights), '', name);
}

describe('numerics through the API', async () => {
  const xa = await createXattn();

  test('logits of ±1e4 give the float64 answer', () => {
    checkFixture(xa, 'large_logits_1e4');
  });

  test('1e10 at masked positions and -inf masks leave the result as if those keys were absent', () => {
    const q = { data: Float32Array.from([0.1, 0.2, -0.3, 0.4]), shape: [2, 2] };
    const k = { data: Float32Array.from([1, 2, 3, 4, 1e10, -1e10]), shape: [3, 2] };
    const v = { data: Float32Array.from([1, 2, 3, 4, 1e10, Infinity]), shape: [3, 2] };
    const trimmed = xa.scaledDotProductAttention(q, { data: k.data.slice(0, 4), shape: [2, 2] }, { data: v.data.slice(0, 4), shape: [2, 2] });
    const byBool = xa.scaledDotProductAttention(q, k, v, { attnMask: { data: Uint8Array.from([1, 1, 0]), shape: [3] } });
    assert.deepEqual(byBool.output.data, trimmed.output.data);
    const byInf = xa.scaledDotProductAttention(q, k, v,
      { attnMask: { data: Float32Array.from([0, 0, -Infinity]), shape: [3] } });
    assert.equal(mismatch(byInf.output, { shape: [2, 2], values: Array.from(trimmed.output.data) }), '');
  });

  test('all-masked rows give zeros, never NaN', () => {
    checkFixture(xa, 'fully_masked_rows_bool');
    checkFixture(xa, 'causal_L_gt_S_bottom_right');
    const q = t([2, 3], 1);
    const r = xa.scaledDotProductAttention(q, q, q, { attnMask: { data: new Float32Array(4).fill(-Infinity), shape: [2, 2] }, needWeights: true });
    assert.deepEqual(Array.from(r.output.data), [0, 0, 0, 0, 0, 0]);
    assert.deepEqual(Array.from(r.weights.data), [0, 0, 0, 0]);
  });

  test('subnormal inputs compute like small numbers', () => {
    const tiny = 1e-42;  // subnormal in float32
    const q = { data: new Float32Array(6).fill(tiny), shape: [2, 3] };
    const k = { data: Float32Array.from([1, 2, 3, 4, 5, 6]), shape: [2, 3] };
    const v = { data: Float32Array.from([1, 3, 5, 7]), shape: [2, 2] };
    const r = xa.scaledDotProductAttention(q, k, v);
    for (let i = 0; i < 2; i++) {
      assert.ok(Math.abs(r.output.data[2 * i] - 3) < 1e-5);
      assert.ok(Math.abs(r.output.data[2 * i + 1] - 5) < 1e-5);
    }
  });

  test('a NaN stays in the rows it reaches', () => {
    const q = t([4, 3], 0.25);
    q.data[1 * 3 + 2] = NaN;  // query row 1
    const k = t([4, 3], 0.5);
    k.data[3 * 3] = NaN;      // key row 3: visible to query 3 only under causal
    const r = xa.scaledDotProductAttention(q, k, t([4, 2], 1), { isCausal: true });
    const nanRows = [0, 1, 2, 3].filter((i) => Number.isNaN(r.output.data[2 * i]) || Number.isNaN(r.output.data[2 * i + 1]));
    assert.deepEqual(nanRows, [1, 3]);
  });

  test('a NaN key keeps its rows NaN however far a later key tile moves the max', () => {
    // Key 1 is NaN; key 200 scores 400 above the rest, so the keys before it are rescaled by exp(-400) = 0.
    const S = 300, q = { data: new Float32Array(3 * 4).fill(1), shape: [1, 3, 4] };  // (Hq, L, E) = (1, 3, 4)
    const k = t([1, S, 4], 0.5), v = t([1, S, 2], 1);
    k.data[1 * 4 + 2] = NaN;
    k.data.fill(100, 200 * 4, 201 * 4);
    const allNaN = (data) => data.every(Number.isNaN);
    assert.ok(allNaN(xa.scaledDotProductAttention(q, k, v).output.data), 'SDPA');
    for (const dtype of ['float32', 'float16']) {
      const cache = xa.createKvCache({ kvHeads: 1, headDim: 4, valueDim: 2, capacity: S, dtype });
      cache.append({ data: k.data, shape: [1, 1, S, 4] }, { data: v.data, shape: [1, 1, S, 2] });
      assert.ok(allNaN(cache.attend({ data: q.data, shape: [1, 3, 1, 4] }).output.data), `KV cache, ${dtype}`);
      cache.dispose();
    }
  });
});

describe('inputs that alias, share or move', async () => {
  const xa = await createXattn();
  const c = fixture('lesson_example_4x10x64');
  const n = 4 * 10 * 64;

  test('subarrays of one buffer with non-zero byte offsets', () => {
    const buffer = new Float32Array(3 * n + 7);
    buffer.set(c.tensors.query.values, 1);
    buffer.set(c.tensors.key.values, 2 + n);
    buffer.set(c.tensors.value.values, 7 + 2 * n);
    const view = (at) => ({ data: buffer.subarray(at, at + n), shape: [4, 10, 64] });
    const r = xa.scaledDotProductAttention(view(1), view(2 + n), view(7 + 2 * n));
    assert.equal(mismatch(r.output, c.tensors.output), '');
  });

  test('the same array as query, key and value', () => {
    const x = tensor(c.tensors.query);
    const a = xa.scaledDotProductAttention(x, x, x, { needWeights: true });
    const b = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.query), tensor(c.tensors.query), { needWeights: true });
    assert.deepEqual(a.output.data, b.output.data);
    assert.deepEqual(a.weights.data, b.weights.data);
    assert.ok(a.output.data.buffer !== x.data.buffer, 'the result is a fresh array');
  });

  test('SharedArrayBuffer-backed inputs', () => {
    const shared = (values) => {
      const data = new Float32Array(new SharedArrayBuffer(4 * values.length));
      data.set(values);
      return { data, shape: [4, 10, 64] };
    };
    const r = xa.scaledDotProductAttention(shared(c.tensors.query.values), shared(c.tensors.key.values), shared(c.tensors.value.values));
    assert.equal(mismatch(r.output, c.tensors.output), '');
    assert.ok(!(r.output.data.buffer instanceof SharedArrayBuffer));
  });

  test('a detached buffer is refused with a clear TypeError, as input or mask', () => {
    const moved = tensor(c.tensors.query);
    structuredClone(moved.data.buffer, { transfer: [moved.data.buffer] });
    assert.throws(() => xa.scaledDotProductAttention(moved, tensor(c.tensors.key), tensor(c.tensors.value)),
      (e) => e instanceof TypeError && e.message === 'scaledDotProductAttention: query.data is backed by a detached ArrayBuffer');
    const mask = { data: new Uint8Array(100), shape: [10, 10] };
    structuredClone(mask.data.buffer, { transfer: [mask.data.buffer] });
    assert.throws(() => xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value), { attnMask: mask }),
      /attnMask.data is backed by a detached ArrayBuffer/);
  });
});
