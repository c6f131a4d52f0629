// Soak (npm run test:long): a 100,000-call soak through the JS API with heap growth in the middle, and running
// out of wasm memory.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { createTestingXattn } from '../js/testing-build.mjs';
import { loadCases, mismatch, sdpaOptions, tensor } from '../js/golden.mjs';

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
