// Thousands of calls, failing ones and created-and-disposed modules included, leave memory flat;
// results stay right across heap growth; two instances do not disturb each other.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { createTestingXattn } from '../js/testing-build.mjs';
import { loadCases, mismatch, sdpaOptions, tensor } from '../js/golden.mjs';

const lesson = loadCases('sdpa.txt').find((c) => c.name === 'lesson_example_4x10x64');
const tensors = (c) => [tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value)];
const t = (shape, fill) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)).fill(fill), shape });

function checkLesson(xa) {
  const r = xa.scaledDotProductAttention(...tensors(lesson), sdpaOptions(lesson));
  assert.equal(mismatch(r.output, lesson.tensors.output), '');
  assert.equal(mismatch(r.weights, lesson.tensors.weights), '');
}

// One round of everything a user might do, valid and not.
function round(xa, i) {
  const q = t([2, 3, 8], 0.1 * (i % 7));
  const k = t([2, 5, 8], 0.2);
  const v = t([2, 5, 4], 1);
  xa.scaledDotProductAttention(q, k, v, { needWeights: i % 2 === 0, isCausal: i % 3 === 0 });
  xa.scaledDotProductAttention(q, k, v, { attnMask: { data: new Uint8Array(15).fill(1), shape: [3, 5] } });
  const failing = [
    () => xa.scaledDotProductAttention(q, t([2, 5, 6], 0), v),
    () => xa.scaledDotProductAttention(q, k, v, { dropoutP: 2 }),
    () => xa.scaledDotProductAttention(q, k, v, { attnMask: { data: new Float32Array(4), shape: [2, 2] } }),
    () => xa.scaledDotProductAttention({ data: new Float64Array(48), shape: [2, 3, 8] }, k, v),
    () => xa.createMultiheadAttention({ embedDim: 6, numHeads: 4 }),
  ];
  for (const f of failing) assert.throws(f);
  const mha = xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, batchFirst: i % 2 === 1 });
  mha.setParameters({ 'out_proj.bias': new Float32Array(8).fill(0.5) });
  assert.throws(() => mha.setParameters({ 'out_proj.bias': new Float32Array(3) }));
  const [qs, ks] = i % 2 === 1 ? [[2, 3, 8], [2, 4, 8]] : [[3, 2, 8], [4, 2, 8]];  // batchFirst or not
  const y = mha.forward(t(qs, 0.3), t(ks, 0.1), t(ks, 0.2), { needWeights: i % 2 === 0 });
  assert.deepEqual(y.output.shape, qs);
  assert.throws(() => mha.forward(t([3, 2, 7], 0.3), t(ks, 0.1), t(ks, 0.2)));
  mha.dispose();
}

describe('memory', () => {
  test('5,000 rounds of valid and failing calls and MHA objects leave malloc and memory flat', async () => {
    const { xa, testing } = await createTestingXattn();
    for (let i = 0; i < 200; i++) round(xa, i);  // warm-up: the allocator settles
    const heap = testing.heapInUse();
    const memory = xa.memoryBytes();
    for (let i = 0; i < 5000; i++) round(xa, i);
    assert.equal(testing.heapInUse(), heap, 'bytes held by malloc after the soak');
    assert.equal(xa.memoryBytes(), memory, 'linear memory after the soak');
    checkLesson(xa);
  });

  test('the heap grows in the middle of a session and every result stays right', async () => {
    const xa = await createXattn();
    const mha = xa.createMultiheadAttention({ embedDim: 8, numHeads: 2 });
    const x = t([3, 1, 8], 0.25);
    const before = mha.forward(x, x, x).output.data;
    const held = xa.scaledDotProductAttention(...tensors(lesson)).output.data;  // must survive growth (a copy)
    const start = xa.memoryBytes();
    // 8 x 1024 x 1024 weights: 32 MiB, more than the initial 16 MiB heap.
    const big = t([8, 1024, 16], 0.01);
    const r = xa.scaledDotProductAttention(big, big, big, { needWeights: true });
    assert.ok(xa.memoryBytes() > start, 'the heap grew');
    assert.equal(r.weights.data.length, 8 * 1024 * 1024);
    assert.ok(Math.abs(r.weights.data[12345] - 1 / 1024) < 1e-7);
    assert.deepEqual(mha.forward(x, x, x).output.data, before);
    const again = xa.scaledDotProductAttention(...tensors(lesson)).output.data;
    assert.deepEqual(again, held);
    checkLesson(xa);
    mha.dispose();
  });

  test('two instances, SIMD and scalar, work side by side without sharing state', async () => {
    const [a, b, c] = await Promise.all([createXattn({ simd: true }), createXattn({ simd: false }), createXattn()]);
    const ma = a.createMultiheadAttention({ embedDim: 4, numHeads: 2 });
    const mb = b.createMultiheadAttention({ embedDim: 4, numHeads: 2 });
    const w = new Float32Array(48).map((_, i) => Math.sin(i));
    ma.setParameters({ in_proj_weight: w });
    mb.setParameters({ in_proj_weight: w });
    const x = t([2, 1, 4], 0.5);
    x.data.set([0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8]);
    for (let i = 0; i < 20; i++) {
      checkLesson(i % 2 ? a : b);
      checkLesson(c);
    }
    const ya = ma.forward(x, x, x);
    ma.dispose();  // disposing in one instance leaves the other's module alone
    const yb = mb.forward(x, x, x);
    assert.equal(mismatch(yb.output, { shape: ya.output.shape, values: Array.from(ya.output.data) }), '');
    assert.throws(() => ma.forward(x, x, x), /disposed/);
    mb.dispose();
    assert.notEqual(a.simd, b.simd);
  });
});
