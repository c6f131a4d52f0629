// Reliability through the JS API: a 100,000-call soak with heap growth in the middle, running out
// of wasm memory, the documented numerics, and inputs that alias, share or move.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { createTestingXattn } from './testing-build.mjs';
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

// Ten calls of every kind, valid and not; returns how many calls it made.
function mixedCalls(xa, i) {
  const q = t([1, 2, 4], (i % 5) * 0.1);
  const kv = t([1, 3, 4], 0.5);
  xa.scaledDotProductAttention(q, kv, kv, i % 2 === 0 ? { isCausal: true, causalAlignment: 'bottom-right' } : {});
  xa.scaledDotProductAttention(q, kv, kv, { needWeights: true, dropoutP: 0.5, seed: i });
  xa.scaledDotProductAttentionGrad(q, kv, kv, t([1, 2, 4], 1));
  const refusals = [
    () => xa.scaledDotProductAttention(q, t([1, 3, 5]), kv),
    () => xa.scaledDotProductAttention(q, kv, kv, { attnMask: { data: new Uint8Array(5), shape: [5] } }),
    () => xa.scaledDotProductAttention(q, kv, kv, { scale: 0 }),
    () => xa.scaledDotProductAttention({ data: new Float32Array(3), shape: [1, 2, 4] }, kv, kv),
  ];
  for (const f of refusals) assert.throws(f);
  const mha = xa.createMultiheadAttention({ embedDim: 4, numHeads: 2, addBiasKv: i % 3 === 0 });
  mha.forward(t([2, 1, 4], 0.2), t([3, 1, 4], 0.1), t([3, 1, 4], 0.3));
  assert.throws(() => mha.forward(t([2, 1, 5]), t([3, 1, 4]), t([3, 1, 4])));
  mha.dispose();
  return 10;
}

describe('soak', () => {
  test('100,000 calls with heap growth in the middle: malloc and memory flat, results right at the end', async () => {
    const { xa, testing } = await createTestingXattn();
    let calls = 0;
    for (let i = 0; i < 200; i++) calls += mixedCalls(xa, i);  // warm-up
    const heap = testing.heapInUse();
    const memory = xa.memoryBytes();
    for (let i = 0; i < 4900; i++) calls += mixedCalls(xa, i);
    assert.equal(testing.heapInUse(), heap, 'malloc after the first half');
    assert.equal(xa.memoryBytes(), memory, 'memory after the first half');

    // Growth: 64 MiB of weights in one call.
    const big = t([16, 1024, 8], 0.01);
    const r = xa.scaledDotProductAttention(big, big, big, { needWeights: true });
    calls += 1;
    assert.ok(Math.abs(r.weights.data[999] - 1 / 1024) < 1e-7);
    const grown = xa.memoryBytes();
    assert.ok(grown > memory, 'the heap grew');
    assert.equal(testing.heapInUse(), heap, 'the big call left nothing held (its block released)');

    for (let i = 0; i < 5000; i++) calls += mixedCalls(xa, i);
    assert.equal(testing.heapInUse(), heap, 'malloc after the second half');
    assert.equal(xa.memoryBytes(), grown, 'memory after the second half');
    assert.ok(calls >= 100000, `${calls} calls`);
    for (const name of ['lesson_example_4x10x64', 'gqa_6_heads_over_2', 'fully_masked_rows_bool', 'causal_L_gt_S_bottom_right']) {
      checkFixture(xa, name);
    }
  });
});

describe('limits', () => {
  test('running out of wasm memory is a clear RangeError, and the instance stays usable', async () => {
    const xa = await createXattn({ simd: false });
    const modules = [];
    let refusal;
    // Each module holds 4 x 4096 x 4096 floats (256 MiB) of parameters; the heap stops at 2 GiB.
    for (let i = 0; i < 12 && !refusal; i++) {
      try {
        modules.push(xa.createMultiheadAttention({ embedDim: 4096, numHeads: 8 }));
      } catch (e) {
        refusal = e;
      }
    }
    assert.ok(refusal instanceof RangeError, `expected a RangeError, got ${refusal}`);
    assert.match(refusal.message, /createMultiheadAttention: .*\d+ bytes/);
    // A call whose buffers do not fit now is refused too, naming what needed the bytes.
    const q = t([64, 1024, 64], 0.1);
    assert.throws(() => xa.scaledDotProductAttention(q, q, q, { needWeights: true }),
      (e) => e instanceof RangeError && /scaledDotProductAttention: .* needs \d+ bytes/.test(e.message));
    for (const m of modules) m.dispose();
    checkFixture(xa, 'lesson_example_4x10x64');
    const again = xa.createMultiheadAttention({ embedDim: 4096, numHeads: 8 });
    again.dispose();
  });

  test('sizes beyond the per-tensor limit are refused before allocating, with the bytes they need', async () => {
    const { xa, testing } = await createTestingXattn();
    const heap = testing.heapInUse();
    const q = t([1, 40000, 1]);
    assert.throws(() => xa.scaledDotProductAttention(q, q, q, { needWeights: true }),
      /weights of shape \(1, 40000, 40000\) needs 6400000000 bytes, more than the limit of 1073741824 bytes per tensor/);
    assert.equal(testing.heapInUse(), heap);
  });
});

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
