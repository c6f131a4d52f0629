// Large calls (npm run test:long): a call whose key and value take 1.5 GiB of the 2 GiB WebAssembly memory runs
// to the end (tests/js/boundary.test.mjs has the calls past the limit, refused).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { loadCases, mismatch, sdpaOptions, tensor } from '../js/golden.mjs';

const GiB = 2 ** 30;
const lesson = loadCases('sdpa.txt').find((c) => c.name === 'lesson_example_4x10x64');
const t = (shape, fill = 0) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)).fill(fill), shape });

// The instance still computes the lesson's example exactly as PyTorch does.
function checkLesson(xa) {
  const r = xa.scaledDotProductAttention(tensor(lesson.tensors.query), tensor(lesson.tensors.key),
    tensor(lesson.tensors.value), sdpaOptions(lesson));
  assert.equal(mismatch(r.output, lesson.tensors.output), '');
  assert.equal(mismatch(r.weights, lesson.tensors.weights), '');
}

describe('calls that fit run to the end', async () => {
  test('forward over 12,582,912 keys (1.5 GiB of key and value) runs and averages V exactly', async () => {
    const xa = await createXattn();
    const S = 3 * 2 ** 22;
    const key = t([1, S, 16], 0);  // every score 0: uniform weights
    const value = t([1, S, 16], 0);
    for (let j = 0; j < S; j++) value.data[j * 16 + (j % 16)] = 16;  // each column's mean is exactly 1
    const r = xa.scaledDotProductAttention(t([1, 2, 16], 0.3), key, value);
    assert.deepEqual(r.output.shape, [1, 2, 16]);
    for (const x of r.output.data) assert.ok(Math.abs(x - 1) < 1e-2, `output ${x}, want 1`);
    assert.ok(xa.memoryBytes() > 1.5 * GiB);
    checkLesson(xa);
  });
});

